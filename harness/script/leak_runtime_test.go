package script

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reproboard/reproboard/harness/meter/leakertest"
	"github.com/reproboard/reproboard/harness/selftest"
)

// leakExpect says how a script of testdata/leak ends against a leaker.
type leakExpect struct {
	outcomes []string // any of these; the first says whether the script passes (GREEN) or fails
	output   []string // regexps the child's output must match
	only     string   // run against this runtime's leaker alone ("": every runtime)
}

// The leaker tests: each script runs against a real process per runtime
// (Go at default GOGC, C with glibc malloc, Node.js with V8 defaults)
// that keeps LEAK_BYTES per call and churns 256 KiB of garbage per call.
var leakExpectations = map[string]leakExpect{
	"red": {outcomes: []string{"RED"}, output: []string{
		`LEAK_MEASURE metric=(uss|v8heap) .* verdict=RED sensitivity=\S+ limited_by=\S+ runtime=\S+ ops=\d+`,
		`RED (uss|v8heap) slope=\S+ > budget 2KiB/op`, `leak leak1: \d+ ops \(adaptive, verdicts at [^)]*RED[^)]*\)`}},
	"green": {outcomes: []string{"GREEN"}},
	"small": {outcomes: []string{"GREEN", "INCONCLUSIVE"}},
	"blind": {outcomes: []string{"INCONCLUSIVE"}, output: []string{
		`verdicts at 200:INCONCLUSIVE\?; stopped at -max-ops 200`}},
	"template": {outcomes: []string{"GREEN"}, only: "go"},
	"fixedkey": {outcomes: []string{"INCONCLUSIVE"}, only: "c", output: []string{
		`INCONCLUSIVE: leak leak1: 1 ops`, `operation 2 \(index \$N=1\) failed: .*key same exists already`}},
	"twolines": {outcomes: []string{"GREEN"}, only: "c"},
	"soak":     {outcomes: []string{"GREEN"}, only: "c"},
	"eof": {outcomes: []string{"INCONCLUSIVE"}, only: "node", output: []string{
		`operation 31 \(index \$N=30\) failed: .*\(server pid \d+ exited rc=3\)`, `session stderr:`, `exiting after 30 calls \(LEAK_EXIT_AFTER\)`}},
}

// couldNotSee is the blind verdict's reason where the run's sensitivity
// is above the budget: it says so, and how many ops would do.
var couldNotSee = []string{
	`INCONCLUSIVE uss slope=\S+ [<>]=? budget 16B/op.*(,? (but|so) this run could not have seen 16B/op|this growth has not passed it): sensitivity \S+/op`,
	`A leak of 16B/op would (not|move) .* in 200 ops.*; run >= \d+ ops \(-max-ops`,
}

// blindSays is what a blind verdict names, per runtime. A V8 heap's lazy
// sizing moves USS by far more than 16 B per op in 200 ops, so on Node the
// reason may instead be that USS convicts a lazily sized heap only after
// thousands of ops: INCONCLUSIVE either way, and said why.
var blindSays = map[string][]string{
	"go":   append([]string{`a Go heap at GOGC=100 GOMEMLIMIT=off does not grow until its live data passes 2\.0 MiB; run >= \d+ ops .*set GOGC=10`}, couldNotSee...),
	"c":    append([]string{`runtime=native`}, couldNotSee...),
	"node": {`runtime=node`, `INCONCLUSIVE uss slope=\S+ [<>]=? budget 16B/op.*(this run could not have seen 16B/op: sensitivity \S+/op|a node heap is sized lazily over its first thousands of ops: uss convicts it only after \d+ ops)`},
}

// TestLeakChild runs one script of testdata/leak against the leaker
// $LEAKER, in the child processes of TestLeakRuntimes only.
func TestLeakChild(t *testing.T) {
	if os.Getenv("LEAKER") == "" {
		t.Skip("runs under TestLeakRuntimes")
	}
	Run(t, Params{Dir: "testdata/leak", NoTarget: true, Setup: func(env *testscript.Env) error {
		for _, k := range []string{"LEAKER", "LEAKER_RUNTIME", "LEAK_METRIC"} {
			env.Vars = append(env.Vars, k+"="+os.Getenv(k))
		}
		return nil
	}})
}

// TestLeakRuntimes runs every script of testdata/leak against each
// runtime's leaker in a child test (most are meant to fail), and checks
// each ended as expected and said why. A runtime whose tool (gcc, node) is
// missing is skipped with the reason.
func TestLeakRuntimes(t *testing.T) {
	ls, err := leakertest.Build(t.TempDir())
	require.NoError(t, err)
	entries, err := os.ReadDir("testdata/leak")
	require.NoError(t, err)
	for _, e := range entries {
		_, ok := leakExpectations[strings.TrimSuffix(e.Name(), ".txtar")]
		require.True(t, ok, "script %s has no expectation", e.Name())
	}
	for _, l := range ls {
		t.Run(l.Runtime, func(t *testing.T) {
			if l.Skip != "" {
				t.Skip(l.Skip)
			}
			for name, exp := range leakExpectations {
				if exp.only != "" && exp.only != l.Runtime {
					continue
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					out := t.TempDir()
					child := selftest.Run(selftest.Child{Run: []string{"TestLeakChild", name}, Env: l.Env(),
						Args: []string{"-test.artifacts", "-test.outputdir=" + out}})
					text := child.Output
					test := "TestLeakChild/" + name
					got := child.Attr(test, "reproboard.outcome")
					assert.Contains(t, exp.outcomes, got, "outcome of %s", name)
					if exp.outcomes[0] == "GREEN" && len(exp.outcomes) == 1 {
						assert.NoError(t, child.Err, "script %s failed", name)
					}
					for _, re := range exp.output {
						assert.Regexp(t, re, text)
					}
					switch name {
					case "blind":
						for _, re := range blindSays[l.Runtime] {
							assert.Regexp(t, re, text)
						}
					case "twolines":
						checkTwoArtefactSets(t, child, test, out)
					}
					if t.Failed() {
						t.Logf("child output:\n%s", text)
					}
				})
			}
		})
	}
}

// checkTwoArtefactSets: both leak lines' samples and charts exist, in a
// folder named by the section, not a number.
func checkTwoArtefactSets(t *testing.T, child selftest.Result, test, out string) {
	dirs := map[string]bool{}
	for _, prefix := range []string{"leak1", "second"} {
		for _, kind := range []string{"samples", "json", "chart"} {
			p := child.Attr(test, "reproboard.artifact."+prefix+".uss."+kind)
			if !assert.NotEmpty(t, p, "artefact %s.uss.%s", prefix, kind) {
				continue
			}
			assert.FileExists(t, p)
			assert.True(t, strings.HasPrefix(filepath.Base(p), prefix+".uss."), p)
			dirs[filepath.Dir(p)] = true
		}
	}
	require.Len(t, dirs, 1, "artefacts in one folder")
	for d := range dirs {
		rel, err := filepath.Rel(out, d)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join("_artifacts", "TestLeakChild", "twolines"), rel)
	}
	ents, _ := os.ReadDir(filepath.Join(out, "_artifacts"))
	for _, e := range ents {
		assert.False(t, regexp.MustCompile(`^\d+$`).MatchString(e.Name()), "numbered folder %s left", e.Name())
	}
}

// TestLeakScratch runs the scripts of $LEAK_SCRATCH against every leaker:
// for calibrating by hand, skipped otherwise.
func TestLeakScratch(t *testing.T) {
	dir := os.Getenv("LEAK_SCRATCH")
	if dir == "" {
		t.Skip("LEAK_SCRATCH not set")
	}
	ls, err := leakertest.Build(t.TempDir())
	require.NoError(t, err)
	for _, l := range ls {
		t.Run(l.Runtime, func(t *testing.T) {
			if l.Skip != "" {
				t.Skip(l.Skip)
			}
			t.Parallel()
			Run(t, Params{Dir: dir, NoTarget: true, Setup: func(env *testscript.Env) error {
				env.Vars = append(env.Vars, l.Env()...)
				return nil
			}})
		})
	}
}
