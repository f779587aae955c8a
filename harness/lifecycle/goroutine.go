package lifecycle

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reproboard/reproboard/harness/outcome"
	"github.com/reproboard/reproboard/harness/wait"
)

// NoGoroutineLeak, called at the start of a test, fails it if goroutines
// started during the test are still running at cleanup. It waits, bounded
// (default 2 s), for them to exit, and on failure prints the stack of each
// one that was not there at the start.
//
// Goroutines are told apart by id, which the runtime never reuses, so a
// goroutine that exited and a new one in its place are not confused. Other
// tests' goroutines (testing.tRunner) and the os/signal loop are ignored.
func NoGoroutineLeak(t testing.TB, opts ...Option) {
	t.Helper()
	c := configure(t, opts)
	before := map[int64]bool{}
	for _, g := range goroutines() {
		before[g.id] = true
	}
	t.Cleanup(func() {
		var leaked []goroutine
		err := wait.For(context.Background(), "goroutines started during "+t.Name()+" to exit", c.timeout, pollEvery, func() wait.Result {
			leaked = leaked[:0]
			for _, g := range goroutines() {
				if !before[g.id] && !g.ignored(c.ignore) {
					leaked = append(leaked, g)
				}
			}
			if len(leaked) == 0 {
				return wait.Done()
			}
			var s []string
			for _, g := range leaked {
				s = append(s, g.summary())
			}
			return wait.Continue("%d still running: %s", len(leaked), strings.Join(s, "; "))
		})
		if err == nil {
			return
		}
		// Report only goroutines that are still there on a second look: one
		// caught starting or ending at the deadline is not a leak.
		now := map[int64]bool{}
		for _, g := range goroutines() {
			now[g.id] = true
		}
		leaked = slices.DeleteFunc(leaked, func(g goroutine) bool { return !now[g.id] })
		if len(leaked) == 0 {
			return
		}
		var stacks strings.Builder
		for _, g := range leaked {
			stacks.WriteString("\n\n" + g.stack)
		}
		outcome.Mark(t, outcome.Red, fmt.Sprintf("goroutine leak: %v", err))
		t.Errorf("NoGoroutineLeak: %v%s", err, stacks.String())
	})
}

type goroutine struct {
	id    int64
	state string // "chan receive", "select", ...
	stack string
}

// summary is "goroutine 37 [chan receive] in pkg.worker": where it was
// started, the function a reader will grep for.
func (g goroutine) summary() string {
	s := fmt.Sprintf("goroutine %d [%s]", g.id, g.state)
	if fn := g.entry(); fn != "" {
		s += " in " + fn
	}
	return s
}

// entry is the goroutine's first function: the frame above "created by".
func (g goroutine) entry() string {
	lines := strings.Split(g.stack, "\n")
	for i := len(lines) - 1; i >= 1; i-- {
		if strings.HasPrefix(lines[i], "created by ") && i >= 2 {
			return funcName(lines[i-2])
		}
	}
	if len(lines) > 1 {
		return funcName(lines[1])
	}
	return ""
}

func funcName(frame string) string {
	if i := strings.LastIndexByte(frame, '('); i > 0 && strings.HasSuffix(frame, ")") {
		return frame[:i]
	}
	return frame
}

// Goroutines that belong to the test binary, not to the code under test.
var alwaysIgnored = []string{
	"testing.tRunner(", "testing.runFuzzing(", "os/signal.loop(", "os/signal.signal_recv(",
	"context.WithDeadlineCause.func", // a deadline firing: the bounded wait's own, among others
}

func (g goroutine) ignored(extra []string) bool {
	for _, fn := range append(alwaysIgnored, extra...) {
		if strings.Contains(g.stack, fn) {
			return true
		}
	}
	return false
}

// goroutines lists every goroutine but the caller's.
func goroutines() []goroutine {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutine
	for i, block := range strings.Split(strings.TrimSpace(string(buf)), "\n\n") {
		if i == 0 {
			continue // runtime.Stack puts the calling goroutine first
		}
		header, _, _ := strings.Cut(block, "\n")
		rest, ok := strings.CutPrefix(header, "goroutine ")
		if !ok {
			continue
		}
		idText, rest, _ := strings.Cut(rest, " ")
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil {
			continue
		}
		state := ""
		if a, b := strings.IndexByte(rest, '['), strings.IndexByte(rest, ']'); a >= 0 && b > a {
			state = rest[a+1 : b]
		}
		out = append(out, goroutine{id: id, state: state, stack: block})
	}
	return out
}
