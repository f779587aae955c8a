package script

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reproboard/reproboard/harness/backstop"
	"github.com/reproboard/reproboard/harness/selftest"
)

// levelsToTry are the isolation levels the supervision scripts run under:
// cgroup where the machine has a writable hierarchy, and subreaper as on a
// machine without one.
var levelsToTry = []backstop.Isolation{backstop.IsolationCgroup, backstop.IsolationSubreaper}

// superviseExpect says how each script of testdata/engine/supervise ends.
var superviseExpect = map[string]struct {
	fail     bool
	output   []string // regexps the child's output must match
	absent   []string // ... and must not
	backstop string   // a regexp the backstop attribute must match
	within   time.Duration
}{
	"refuse_exec": {fail: true, output: []string{
		`testdata/engine/supervise/refuse_exec.txtar:3: exec sh -c 'sleep 30 & echo started': testscript's exec is not bounded .*; write instead: run sh -c 'sleep 30 & echo started'`,
		`refuse_exec.txtar:4: ! exec false: .*write instead: ! run false`},
		absent: []string{`before-the-refused-line`}},
	"refuse_exec_bg": {fail: true, output: []string{
		`refuse_exec_bg.txtar:2: exec sh -c 'trap "" INT TERM; sleep 600' &: .*write instead: spawn NAME sh -c 'trap "" INT TERM; sleep 600'`}},
	"run_grandchild": {backstop: `^stopped left-over processes: pid \d+ \(sleep 30\) \[isolation: LEVEL\]$`, within: 8 * time.Second},
	"spawn_ignorer":  {output: []string{`backstop killed \(SIGKILL\): pid \d+ \(sleep 600\)`}, backstop: `pid \d+ \(sleep 600\) \[isolation: LEVEL\]`, within: 10 * time.Second},
	"run_flood":      {fail: true, output: []string{`run failed: sh -c .*: rc=3 after`, `\.\.\.\(\d+ chars elided\)\.\.\.`, `LAST-LINE-OF-THE-FLOOD`}},
	"envclear_spawn": {backstop: `pid \d+ \((setsid -f )?(env -i )?/bin/sleep 3601\) \[isolation: LEVEL\]`},
	"envclear_run":   {backstop: `pid \d+ \((setsid -f )?(env -i )?/bin/sleep 3601\) \[isolation: LEVEL\]`},
}

// TestSupervision runs each script of testdata/engine/supervise in a child
// test process under each isolation level, and checks how it ended: exec
// refused at load, bounded run and spawn, daemons that shed the marker
// stopped at the section's end, the flood's peak RSS.
func TestSupervision(t *testing.T) {
	if os.Getenv("SUPERVISE_CHILD") == "1" {
		Run(t, Params{Dir: "testdata/engine/supervise", NoTarget: true})
		return
	}
	entries, err := os.ReadDir("testdata/engine/supervise")
	require.NoError(t, err)
	for _, level := range levelsToTry {
		t.Run(string(level), func(t *testing.T) {
			if level == backstop.IsolationCgroup && !haveCgroup(t) {
				t.Skip("no writable cgroup v2 hierarchy here: run as root, or in a delegated cgroup")
			}
			for _, e := range entries {
				name := strings.TrimSuffix(e.Name(), ".txtar")
				exp, ok := superviseExpect[name]
				require.True(t, ok, "script %s has no expectation", name)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					child := selftest.Run(selftest.Child{Run: []string{"TestSupervision", name},
						Env: []string{"SUPERVISE_CHILD=1", backstop.IsolationEnv + "=" + string(level)}})
					text := child.Output
					test := "TestSupervision/" + name
					if exp.fail {
						require.Error(t, child.Err, "script %s passed, want a failure:\n%s", name, text)
						assert.Contains(t, text, "--- FAIL: "+test)
						assert.Equal(t, "RED", child.Attr(test, "reproboard.outcome"), text)
					} else {
						require.NoError(t, child.Err, "script %s failed:\n%s", name, text)
						if strings.Contains(text, "--- SKIP: "+test) {
							t.Skipf("the script skipped itself:\n%s", text)
						}
					}
					for _, re := range exp.output {
						assert.Regexp(t, re, text)
					}
					for _, re := range exp.absent {
						assert.NotRegexp(t, re, text)
					}
					if exp.backstop != "" {
						bs := child.Attr(test, "reproboard.backstop")
						assert.Regexp(t, strings.ReplaceAll(exp.backstop, "LEVEL", string(level)), bs, text)
						// What it names is gone.
						for _, m := range regexp.MustCompile(`pid (\d+)`).FindAllStringSubmatch(bs, -1) {
							pid, _ := strconv.Atoi(m[1])
							// Gone, or a zombie its new parent has yet to reap.
							_, state, err := backstop.State(pid)
							assert.True(t, err != nil || backstop.Finished(state), "pid %d outlived the section (state %c)", pid, state)
						}
					}
					if exp.within > 0 {
						took, ok := child.Elapsed(test)
						require.True(t, ok, text)
						assert.Less(t, took, exp.within, "script took %s", took)
					}
					if name == "run_flood" {
						t.Logf("peak RSS of the test process while 200 MB went by: %d MiB", child.MaxRSS>>20)
						assert.Less(t, child.MaxRSS, int64(100<<20))
					}
					if t.Failed() {
						t.Logf("child output:\n%s", text)
					}
				})
			}
		})
	}
}

func haveCgroup(t *testing.T) bool {
	base := t.TempDir()
	r, _, err := backstop.StartRunWith(base, backstop.IsolationCgroup)
	if err != nil {
		return false
	}
	defer r.Close(false)
	return r.Isolation == backstop.IsolationCgroup
}

// stressScript is one of the 12 scripts of the storm-and-orphans stress: a
// client storm whose clients leave short orphans, beside a command that
// does too. A harness that reaps zombies it did not start takes their
// exit statuses from the other sections' waits.
const stressScript = `storm -n 20 sh -c '(sleep 0.1 &); echo ok'
run sh -c '(sleep 0.2 &); true'
`

// StormStress runs the 12 stress scripts count times at -parallel 12 in a
// child test process under level, and returns the failed sections.
func StormStress(t testing.TB, level backstop.Isolation, count int) (failed []string, out string) {
	dir := filepath.Join(t.TempDir(), "stress")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for i := range 12 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%02d.txtar", i)), []byte(stressScript), 0o644))
	}
	child := selftest.Run(selftest.Child{Run: []string{"TestStormStress"},
		Env:  []string{"STRESS_CHILD=" + dir, backstop.IsolationEnv + "=" + string(level)},
		Args: []string{"-test.parallel=12", fmt.Sprintf("-test.count=%d", count), "-test.timeout=20m"}})
	for _, m := range regexp.MustCompile(`--- FAIL: TestStormStress/(s\d+)`).FindAllStringSubmatch(child.Output, -1) {
		failed = append(failed, m[1])
	}
	if child.Err != nil && len(failed) == 0 {
		failed = append(failed, "the child: "+child.Err.Error())
	}
	return failed, child.Output
}

// TestStormStress is the short form of the stress at -parallel 12: 10
// iterations at the strongest level the machine has, 3 at each weaker one;
// 0 failures. `make stress` runs 100 at every level
// (REPROBOARD_STRESS_COUNT). On the harness that reaped any zombie child,
// 10 iterations failed 2 to 4 of the 120 sections.
func TestStormStress(t *testing.T) {
	if dir := os.Getenv("STRESS_CHILD"); dir != "" {
		Run(t, Params{Dir: dir, NoTarget: true})
		return
	}
	count := 10
	fixed := false
	if n, err := strconv.Atoi(os.Getenv("REPROBOARD_STRESS_COUNT")); err == nil && n > 0 {
		count, fixed = n, true
	}
	for _, level := range []backstop.Isolation{backstop.IsolationCgroup, backstop.IsolationSubreaper, backstop.IsolationMarker} {
		t.Run(string(level), func(t *testing.T) {
			if level == backstop.IsolationCgroup && !haveCgroup(t) {
				t.Skip("no writable cgroup v2 hierarchy here")
			}
			failed, out := StormStress(t, level, count)
			if !fixed {
				count = 3 // the weaker levels, after the strongest
			}
			if !assert.Empty(t, failed, "%d of %d sections failed", len(failed), 12*count) {
				t.Logf("child output tail:\n%s", out[max(0, len(out)-6000):])
			}
		})
	}
}
