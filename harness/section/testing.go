package section

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/reproboard/reproboard/harness/outcome"
)

// deadlineMargin leaves a section's cleanup time before the test binary's
// own -timeout panics.
const deadlineMargin = 10 * time.Second

// ForTest creates a section for t: the board's selection applies first (a
// dry run or another shard skips t), a failure to create it is SETUP-FAIL,
// and the backstop runs when t ends.
func ForTest(t testing.TB, cfg Config) *Section {
	t.Helper()
	outcome.Select(t)
	r, err := DefaultRun()
	if err != nil {
		outcome.SetupFailf(t, "reproboard run: %v", err)
	}
	if cfg.Name == "" {
		cfg.Name = t.Name()
	}
	if cfg.Deadline.IsZero() {
		if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
			if dl, ok := d.Deadline(); ok {
				cfg.Deadline = dl.Add(-deadlineMargin)
			}
		}
	}
	s, err := New(r, cfg)
	if err != nil {
		outcome.SetupFailf(t, "%v", err)
	}
	t.Cleanup(func() { Report(t, s.Close()) })
	return s
}

// Report puts a section's end into t: processes the backstop had to stop
// are logged, and recorded as an attribute when the section passed;
// processes it could not stop fail the test.
func Report(t testing.TB, end End) {
	t.Helper()
	if end.KeptRoot != "" {
		t.Logf("section root kept: %s", end.KeptRoot)
	}
	if end.Backstop.Empty() {
		return
	}
	t.Logf("%s\n(isolation: %s)", end.Backstop, end.Isolation)
	var pids []string
	for _, p := range end.Backstop.Stopped() {
		pids = append(pids, p.String())
	}
	// A failed section never reached the steps that would have stopped its
	// processes; a passing one should have, so the board hears of it, and
	// of the isolation that found them.
	if len(pids) > 0 && !t.Failed() {
		t.Attr(outcome.AttrBackstop, fmt.Sprintf("stopped left-over processes: %s [isolation: %s]", strings.Join(pids, ", "), end.Isolation))
	}
	if len(end.Backstop.Survivors) > 0 {
		t.Errorf("the backstop could not stop every process the section started:\n%s", end.Backstop)
	}
}

// Main runs a test binary's tests, then ends its run: whatever still
// carries the run's marker is stopped and the run directory removed. Use
// it from TestMain: os.Exit(section.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if rep := CloseDefaultRun(); !rep.Empty() {
		fmt.Fprintf(os.Stderr, "reproboard: at exit %s\n", rep)
	}
	return code
}
