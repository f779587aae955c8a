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

// fixes names, for each repro, the switch that turns its bug's fix on in
// the demo target, and what its RED must show: green <=> fixed.
var fixes = []struct {
	repro string   // script under testdata/repro
	fix   string   // KEY=VALUE that turns the fix on
	red   []string // regexps the buggy build's failure must match
	green []string // regexps the fixed build's pass must match
}{
	{
		repro: "issue581",
		fix:   "DEMOD_FIX_581=1",
		red: []string{
			`LEAK_MEASURE metric=uss .*verdict=RED`,
			`LEAK_MEASURE metric=file:cache/\*\*/\*\.db-wal .*verdict=RED`,
			`=== ATTR  TestReproScripts/issue581 reproboard.outcome RED`,
		},
		green: []string{
			`LEAK_MEASURE metric=uss .*verdict=GREEN`,
			`LEAK_MEASURE metric=file:cache/\*\*/\*\.db-wal .*verdict=GREEN`,
			`=== ATTR  TestReproScripts/issue581 reproboard.outcome GREEN`,
		},
	},
}

// reproChildEnv asks this test binary to run the repro scripts.
const reproChildEnv = "REPROBOARD_REPRO_CHILD"

// TestReproScripts runs the repro scripts of testdata/repro, only in the
// child processes of TestReprosAreGreenIffFixed: repros are RED until their
// bug is fixed, and run on the bug-repro board, never on this one.
func TestReproScripts(t *testing.T) {
	if os.Getenv(reproChildEnv) != "1" {
		t.Skip("runs only under TestReprosAreGreenIffFixed; the repros themselves are on the bug-repro board")
	}
	script.Run(t, script.Params{Dir: "../testdata/repro"})
}

// TestReprosAreGreenIffFixed guards the repros themselves: each runs twice
// in a child test process, and must be RED on the target as shipped and
// GREEN with the fix switched on. A repro that cannot tell the two apart
// is vacuous, and that is a regression of this project.
func TestReprosAreGreenIffFixed(t *testing.T) {
	if n := os.Getenv(target.NameEnv); n != "" && n != "demod" {
		t.Skip("the fix switches are demod's")
	}
	tgt, err := script.Target()
	require.NoError(t, err)
	for _, f := range fixes {
		for _, fixed := range []bool{false, true} {
			name := f.repro + "/as-shipped"
			if fixed {
				name = f.repro + "/fixed"
			}
			t.Run(name, func(t *testing.T) {
				// A section of the board: listed, not run, by a dry run, and run
				// by one shard only (its child runs in full, see selftest).
				outcome.Select(t)
				t.Parallel()
				env := []string{target.BinaryEnv + "=" + tgt.Path, reproChildEnv + "=1"}
				if fixed {
					env = append(env, f.fix)
				}
				child := selftest.Run(selftest.Child{Run: []string{"TestReproScripts", f.repro}, Env: env})
				text, err := child.Output, child.Err
				want := f.red
				if fixed {
					require.NoError(t, err, "repro %s is not GREEN with %s:\n%s", f.repro, f.fix, text)
					want = f.green
				} else {
					require.Error(t, err, "repro %s is GREEN on the buggy build: it reproduces nothing:\n%s", f.repro, text)
				}
				for _, re := range want {
					assert.Regexp(t, re, text)
				}
				if t.Failed() {
					t.Logf("repro output:\n%s", text)
				}
			})
		}
	}
}
