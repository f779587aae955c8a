package guards

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reproboard/reproboard/harness/outcome"
	"github.com/reproboard/reproboard/harness/script"
	"github.com/reproboard/reproboard/harness/selftest"
	"github.com/reproboard/reproboard/harness/target"
)

// breakEnv selects one of demod's test-only regressions (BUGS.md).
const breakEnv = "DEMOD_TEST_BREAK"

// breaks pairs each deliberate regression of demod with the guard that
// must catch it and what the guard's failure must say.
var breaks = []struct {
	name   string // DEMOD_TEST_BREAK value
	guard  string // script under testdata/guards/daemon
	reason string // regexp the failure must match: why it is RED
}{
	{"restart-under-storm", "churn-stability", "(are different processes|is not running|storm of \\d+ .*failed|no match for `active \\\\\\(permanent\\\\\\)` found in stdout)"},
	{"stop-ignores-sessions", "stop-refuses-busy", `target daemon stop: unexpected success`},
	{"start-new-pid", "start-status-port", "(?s)daemon: started \\(permanent, pid \\d+\\).*no match for `already active \\\\\\(permanent` found in stdout"},
	{"stale-state", "crash-recovery", "waiting for `target daemon status` to give a non-zero exit, stdout matching \"not running\": its output matched -fail"},
	{"hook-fails-closed", "hook-fail-open", `target failed: hook-augment: rc=1`},
	{"port-blocks", "start-status-port", `target failed: daemon start --port=\d+: rc=\d+`},
	{"writer-gives-up", "start-port-waits-for-settings-writer", `process \$CLIENT \(pid \d+\) is not running`},
	{"port-blocks", "status-page", `target failed: daemon start --port=\d+: rc=\d+`},
	{"stop-ignores-sessions", "ephemeral", `target daemon stop: unexpected success`},
	{"hook-fails-closed", "hook-augment", `target failed: hook-augment: rc=1`},
}

// TestGuardsCatchBreaks runs each guard against a demod broken on
// purpose, in a child test process, and checks the guard goes RED with a
// tail excerpt that says why.
func TestGuardsCatchBreaks(t *testing.T) {
	if n := os.Getenv(target.NameEnv); n != "" && n != "demod" {
		t.Skip("the deliberate regressions are demod's")
	}
	// Build once here; the children use this binary.
	tgt, err := script.Target()
	require.NoError(t, err)
	for _, b := range breaks {
		t.Run(b.name+"/"+b.guard, func(t *testing.T) {
			// A section of the board: listed, not run, by a dry run, and run
			// by one shard only (its child runs in full, see selftest).
			outcome.Select(t)
			t.Parallel()
			child := selftest.Run(selftest.Child{Run: []string{"TestGuards", "daemon", b.guard},
				Env: []string{breakEnv + "=" + b.name, target.BinaryEnv + "=" + tgt.Path},
				// A guard that waits for a state the break never reaches
				// gives up at its section's deadline, not its own 60s.
				Args: []string{"-test.timeout=45s"}})
			test := "TestGuards/daemon/" + b.guard
			require.Error(t, child.Err, "guard %s stayed GREEN with %s=%s:\n%s", b.guard, breakEnv, b.name, child.Output)
			assert.Contains(t, child.Output, "--- FAIL: "+test)
			assert.Equal(t, "RED", child.Attr(test, "reproboard.outcome"))
			assert.Regexp(t, b.reason, child.Output)
			// How long the failing command ran before RED: the figure
			// that says a section does not wait for what can no longer
			// happen (make bench prints them as a table; no timed
			// assertion here).
			took, _ := child.Elapsed(test)
			t.Logf("break %s: %s failed by %s; section %.1fs", b.name, b.guard, child.Attr(test, script.FailedAfterAttr), took.Seconds())
			if t.Failed() {
				t.Logf("guard output:\n%s", child.Output)
			}
		})
	}
}
