package lifecycle

import (
	"context"
	"fmt"
	"testing"

	"github.com/reproboard/reproboard/harness/outcome"
	"github.com/reproboard/reproboard/harness/wait"
)

// RegistryBounded runs churn(i) for i in [0, cycles) — typically register,
// use and release one entry — and fails t unless the registry measured by
// size() drains to 0 afterwards, within a bounded wait (default 2 s) for
// reapers that sweep asynchronously. With Max(n) it also fails as soon as
// size() exceeds n after a cycle. Failures give the size seen and the peak.
func RegistryBounded(t testing.TB, cycles int, churn func(i int), size func() int, opts ...Option) {
	t.Helper()
	c := configure(t, opts)
	peak, peakAt := 0, -1
	for i := range cycles {
		churn(i)
		n := size()
		if n > peak {
			peak, peakAt = n, i
		}
		if c.max >= 0 && n > c.max {
			fail(t, fmt.Sprintf("registry size %d after churn cycle %d exceeds max %d", n, i, c.max))
			return
		}
	}
	err := wait.For(context.Background(), fmt.Sprintf("registry to drain to size 0 after %d churn cycles", cycles), c.timeout, pollEvery, func() wait.Result {
		if n := size(); n != 0 {
			return wait.Continue("size %d", n)
		}
		return wait.Done()
	})
	if err != nil {
		at := ""
		if peakAt >= 0 {
			at = fmt.Sprintf(" after cycle %d", peakAt)
		}
		fail(t, fmt.Sprintf("%v (peak size %d%s)", err, peak, at))
	}
}

func fail(t testing.TB, msg string) {
	t.Helper()
	outcome.Mark(t, outcome.Red, msg)
	t.Errorf("RegistryBounded: %s", msg)
}
