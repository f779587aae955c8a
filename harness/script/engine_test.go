package script

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reproboard/reproboard/harness/selftest"
)

// TestEnginePass runs the scripts that exercise every command's success
// path against the fake target.
func TestEnginePass(t *testing.T) {
	Run(t, Params{Dir: "testdata/engine/pass", Target: fakeTarget()})
}

// Scripts run in parallel, and no two share a directory.
func TestEngineSectionsShareNoDirectory(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	dir := t.TempDir()
	for i := range 6 {
		os.WriteFile(dir+"/s"+strconv.Itoa(i)+".txtar", []byte("dirs\n"), 0o644)
	}
	t.Run("scripts", func(t *testing.T) {
		Run(t, Params{Dir: dir, Target: fakeTarget(), Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"dirs": func(ts *testscript.TestScript, neg bool, args []string) {
				mu.Lock()
				defer mu.Unlock()
				for _, v := range []string{"WORK", "SECTION", "CACHE", "RUNTIME", "HOME", "TMPDIR"} {
					d := ts.Getenv(v)
					if other, ok := seen[d]; ok {
						ts.Fatalf("%s=%s is shared with %s", v, d, other)
					}
					seen[d] = ts.Name() + " " + v
				}
			},
		}})
	})
	assert.Len(t, seen, 6*6)
	for d := range seen {
		for other := range seen {
			if d != other && strings.HasPrefix(other, d+"/") && !strings.Contains(seen[d], "SECTION") && !strings.Contains(seen[d], "WORK") {
				t.Errorf("%s (%s) contains %s (%s)", d, seen[d], other, seen[other])
			}
		}
	}
}

// expectation says how a script under testdata/engine/expect ends.
type expectation struct {
	fail    bool
	outcome string
	output  []string // regexps the test's output must match
	within  time.Duration
}

var expectations = map[string]expectation{
	"target_fails":       {fail: true, output: []string{`target failed: fail: rc=3`, `boom: the fake failed`}},
	"target_hangs":       {fail: true, output: []string{`target hung: hang: rc=124`, `partial output before hanging`, `\[timed out after 0\.5s\]`}},
	"unexpected_success": {fail: true, output: []string{`target echo fine: unexpected success \(rc 0\)`}},
	"waitline_timeout":   {fail: true, output: []string{`timed out after 3\d\dms waiting for h to print a line matching "never"; last saw: last line "partial output before hanging"`}},
	"reap_nonzero":       {fail: true, output: []string{`f exited 3: \S+ fail: rc=3 after \S+\s+output tail:`, `boom`}},
	"poll_timeout":       {fail: true, output: []string{"waiting for `target fail` to give exit 0; last saw: attempt \\d+ rc=3", `the last attempt \(rc=3 after \S+\) printed:\s+stdout tail:\s+some preamble\s+stderr tail:\s+boom`}},
	"pidfrom_nomatch":    {fail: true, output: []string{"pidfrom X: no match for `pid\\[: \\]\\+\\(\\\\d\\+\\)`", `no number here`}},
	"alive_dead":         {fail: true, output: []string{`process \$D \(pid \d+\) is not running`}},
	"not_dead":           {fail: true, output: []string{`timed out after 3\d\dms waiting for process \$D \(pid \d+ .*\) to end; last saw: still running`}},
	"samepid_differs":    {fail: true, output: []string{`\$A=101 and \$B=202 are different processes`}},
	"storm_hang": {fail: true, within: 2*time.Second + 2*time.Second + 3*time.Second,
		output: []string{`storm of 20 .*: 1 failed`, `client \d+: rc=124 after`, `client 13 partial output`, `\[timed out after 2s\]`}},
	"holdlock_busy":      {fail: true, output: []string{`holdlock .*x.db: .*(locked|BUSY)`}},
	"waitfile_timeout":   {fail: true, output: []string{`timed out after 3\d\dms waiting for \S+never.txt to exist; last saw: .*no such file`}},
	"mcp_tool_error":     {fail: true, output: []string{`mcp s call fail after \S+: tool fail returned an error: .*failed on purpose`, `session stderr:`}},
	"mcp_init_fails":     {fail: true, output: []string{`mcp s initialize: .*server pid \d+`, `session stderr:`, `bye from stderr`}},
	"setup_fails":        {fail: true, outcome: "SETUP-FAIL", output: []string{`SETUP-FAIL: precondition failed: .*fail: rc=3`}},
	"usage":              {fail: true, output: []string{`spawn: wrong number of arguments`, `usage: spawn \[-timeout d\] NAME cmd args`}},
	"target_flag_hint":   {fail: true, output: []string{`target: -timeout soon: .*\(if -timeout is the program's own flag, write target -- -timeout soon\)`}},
	"neg_never":          {fail: true, output: []string{"spawn does not support `!`"}},
	"logtail_on_failure": {fail: true, output: []string{`tail of the target log logs/fake.log:`, `the daemon said why`}},
	"leak_red": {fail: true, output: []string{`LEAK_MEASURE metric=uss .*verdict=RED`, `leak leak1: 200 ops in \S+ against process with REPROBOARD_SECTION=\S+ and cmdline ~  mcp\$ \(go\S+ GOGC=100 GOMEMLIMIT=off\): RED uss slope=\S+/op > budget 16KiB/op`,
		`=== ATTR  \S+ reproboard.artifact.leak1.uss.chart \S+/leak1.uss.chart.svg`, `=== ATTR  \S+ reproboard.measure.leak1.uss LEAK_MEASURE`}},
	"leak_op_fails":   {fail: true, outcome: "INCONCLUSIVE", output: []string{`INCONCLUSIVE: leak leak1: 0 ops`, `operation 1 \(index \$N=0\) failed`, `boom`}},
	"leak_unreadable": {fail: true, outcome: "INCONCLUSIVE", output: []string{`INCONCLUSIVE: leak leak1: 20 ops`, `INCONCLUSIVE uss`}},
	// Each flag's failure when it is honoured; ignoring the flag ends differently.
	"storm_client_fails":    {fail: true, output: []string{"storm of 5 `target storm-fail \\S+`: 1 failed", `client \d+: rc=1 after \S+\s+stdout tail:\s+\(no output\)\s+stderr tail:\s+client 2 refused`}},
	"poll_stdout_never":     {fail: true, output: []string{"waiting for `target echo hello` to give exit 0, stdout matching \"never\"", `stdout tail:\s+hello`}},
	"poll_stderr_never":     {fail: true, output: []string{"waiting for `target echo hello` to give exit 0, stderr matching \"never\"", `stderr tail:\s+\(no output\)`}},
	"poll_fail":             {fail: true, output: []string{"gave up after attempt 1 waiting for `target fail` to give exit 0: its output matched -fail \"some preamble\", a state this wait cannot leave", `stderr tail:\s+boom`}},
	"poll_every":            {fail: true, output: []string{`last saw: attempt 1 rc=3;`}},
	"poll_while_exited":     {fail: true, output: []string{"gave up after \\S+ waiting for `target fail` to give exit 0: client \\(pid \\d+\\) exited with rc 4 after \\S+, so it can no longer happen \\(it was the last spawned", `client output tail:\s+bye from stderr`}},
	"waitfile_while_exited": {fail: true, output: []string{`gave up after \S+ waiting for \S+never.txt to exist: client \(pid \d+\) exited with rc 4 after`, `last saw: .*no such file`, `bye from stderr`}},
	"waitfile_while_named":  {fail: true, output: []string{`gave up after \S+ waiting for \S+never.txt to exist: client \(pid \d+\) exited with rc 4 after \S+, so it can no longer happen \(-while client\)`}},
	"waitline_while":        {fail: true, output: []string{`gave up after \S+ waiting for other to print a line matching "never": client \(pid \d+\) exited with rc 4`}},
	"waitline_stdout_only":  {fail: true, output: []string{`f exited \(rc 3\) before printing a line matching "boom"`}},
	"waitline_stderr_only":  {fail: true, output: []string{`f exited \(rc 3\) before printing a line matching "preamble"`}},
	"waitport_timeout":      {fail: true, output: []string{`timed out after 3\d\dms waiting for 127.0.0.1:\d+ to accept connections; last saw: .*refused`}},
	"waitport_held":         {fail: true, output: []string{`timed out after 3\d\dms waiting for 127.0.0.1:\d+ to stop accepting connections \(released\); last saw: a connection was accepted`}},
	"waitport_while":        {fail: true, output: []string{`gave up after \S+ waiting for 127.0.0.1:\d+ to accept connections: srv \(pid \d+\) exited with rc 4`}},
	"capture_nomatch":       {fail: true, output: []string{"capture V: no match for `port=\\(\\\\d\\+\\)` in the last command's output:\\s+nothing here"}},
	"spawn_timeout":         {fail: true, output: []string{`h was stopped at its deadline: \S+ hang: rc=124`}},
	"reap_timeout":          {fail: true, output: []string{`timed out after 300ms waiting for h \(pid \d+\) to exit`}},
	"setup_timeout":         {fail: true, outcome: "SETUP-FAIL", output: []string{`SETUP-FAIL: precondition failed: \S+ hang: rc=124 after 3\d\dms`, `\[timed out after 0\.3s\]`}},
	"killpid_signal":        {fail: true, output: []string{`l exited 143:`}},
	"mcp_call_timeout":      {fail: true, output: []string{`mcp s call slow after 3\d\dms: .*(deadline|context)`}},
	"no_output":             {fail: true, output: []string{`target failed: exit-now: rc=4 after \S+\s+stdout tail:\s+\(no output\)\s+stderr tail:\s+bye from stderr`}},
	"leaves_daemon":         {fail: false, outcome: "GREEN", output: []string{`=== ATTR  \S+ reproboard.backstop stopped left-over processes: pid \d+`, `backstop stopped \(SIGTERM\): pid \d+`}},
}

// TestEngineExpectations runs each script of testdata/engine/expect in a
// child test process, since most are meant to fail, and checks that it
// ended as expected and said why.
func TestEngineExpectations(t *testing.T) {
	if os.Getenv("ENGINE_EXPECT_CHILD") == "1" {
		Run(t, Params{Dir: "testdata/engine/expect", Target: fakeTarget()})
		return
	}
	entries, err := os.ReadDir("testdata/engine/expect")
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".txtar"))
	}
	for name := range expectations {
		require.Contains(t, names, name, "expectation without a script")
	}
	for _, name := range names {
		exp, ok := expectations[name]
		require.True(t, ok, "script %s has no expectation", name)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			child := selftest.Run(selftest.Child{Run: []string{"TestEngineExpectations", name}, Env: []string{"ENGINE_EXPECT_CHILD=1"}})
			text := child.Output
			if exp.fail {
				require.Error(t, child.Err, "script %s passed, want a failure:\n%s", name, text)
				assert.Contains(t, text, "--- FAIL: TestEngineExpectations/"+name)
			} else {
				require.NoError(t, child.Err, "script %s failed:\n%s", name, text)
			}
			want := exp.outcome
			if want == "" {
				want = "RED"
			}
			assert.Equal(t, want, child.Attr("TestEngineExpectations/"+name, "reproboard.outcome"))
			for _, re := range exp.output {
				assert.Regexp(t, re, text)
			}
			if exp.within > 0 {
				took, ok := child.Elapsed("TestEngineExpectations/" + name)
				require.True(t, ok, text)
				assert.Less(t, took, exp.within, "script took %s", took)
			}
			if t.Failed() {
				t.Logf("child output:\n%s", text)
			}
		})
	}
}

func TestUsageListsEveryCommand(t *testing.T) {
	u := Usage()
	for name := range table() {
		assert.Regexp(t, `(?m)^(\[!\] )?`+name+` `, u)
	}
}

// TestEngineProfileTarget runs a script against the target of a
// boards.yaml, in the child of TestMissingTargetIsSetupFail only.
func TestEngineProfileTarget(t *testing.T) {
	if os.Getenv("ENGINE_PROFILE_CHILD") != "1" {
		t.Skip("runs under TestMissingTargetIsSetupFail")
	}
	Run(t, Params{Dir: "testdata/engine/profile"})
}

// A profile whose binary is missing makes the section SETUP-FAIL with a
// message that says what to set, not a crash and not a RED.
func TestMissingTargetIsSetupFail(t *testing.T) {
	dir := t.TempDir()
	cfg := dir + "/boards.yaml"
	require.NoError(t, os.WriteFile(cfg, []byte(`targets:
  external:
    binary_env: REPROBOARD_TEST_UNSET_BINARY
    cache_var: EXT_CACHE
    runtime_var: EXT_RUNTIME
boards:
  b:
    packages: [./...]
    target: external
    gating: true
`), 0o644))
	child := selftest.Run(selftest.Child{Run: []string{"TestEngineProfileTarget", "uses-target"},
		Env: []string{"ENGINE_PROFILE_CHILD=1", "REPROBOARD_CONFIG=" + cfg, "REPROBOARD_TARGET=", "REPROBOARD_TARGET_BINARY="}})
	require.Error(t, child.Err, child.Output)
	test := "TestEngineProfileTarget/uses-target"
	assert.Equal(t, "SETUP-FAIL", child.Attr(test, "reproboard.outcome"), child.Output)
	assert.Contains(t, child.Attr(test, "reproboard.reason"), "target external: its binary comes from $REPROBOARD_TEST_UNSET_BINARY, which is not set")
	assert.NotContains(t, child.Output, "panic")
}
