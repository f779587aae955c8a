package board

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reproboard/reproboard/harness/config"
	"github.com/reproboard/reproboard/harness/excerpt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func collectFile(t *testing.T, name string) *Results {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata/events", name))
	require.NoError(t, err)
	defer f.Close()
	res, err := Collect(f)
	require.NoError(t, err)
	return res
}

func sectionByName(t *testing.T, res *Results, test string) SectionResult {
	t.Helper()
	for _, s := range res.Sections {
		if s.Test == test {
			return s
		}
	}
	t.Fatalf("no section %s among %v", test, res.Names())
	return SectionResult{}
}

func TestCollectLeavesAreSections(t *testing.T) {
	res := collectFile(t, "board.jsonl")
	assert.ElementsMatch(t, []string{
		"TestGuards/daemon/lifecycle", "TestGuards/daemon/stop", "TestGuards/query/rss",
		"TestRepro/issue581", "TestRepro/issue600", "TestRepro/issue700", "TestRepro/issue710",
		"TestRepro/control", "TestRepro/darwin_only", "TestRepro/issue800",
	}, res.Names(), "parents (TestGuards, TestGuards/daemon, TestRepro) are not sections")
	assert.Empty(t, res.Problems, "every package failure is explained by a failed section")

	leak := sectionByName(t, res, "TestRepro/issue581")
	assert.Equal(t, "example.com/app/repro", leak.Package)
	assert.Equal(t, "fail", leak.Action)
	assert.Equal(t, 12040*time.Millisecond, leak.Elapsed)
	assert.Equal(t, "charts/issue581.svg", leak.Attrs["reproboard.artifact.chart"])
	assert.Contains(t, leak.Output, "LEAK_MEASURE op=query")
	assert.NotContains(t, leak.Output, "=== RUN", "framing is dropped")
	assert.NotContains(t, leak.Output, "--- FAIL")
	assert.NotContains(t, leak.Output, "=== ATTR")

	skip := sectionByName(t, res, "TestRepro/darwin_only")
	assert.False(t, skip.Executed())
	assert.Equal(t, "needs darwin: kqueue semantics", skip.SkipReason)
	assert.False(t, skip.Listed())
	assert.False(t, skip.OtherShard())
	assert.Len(t, res.Executed(), 9)
}

func TestCollectBuildFailure(t *testing.T) {
	res := collectFile(t, "build_fail.jsonl")
	require.Len(t, res.Problems, 1)
	p := res.Problems[0]
	assert.Equal(t, ProblemBuild, p.Kind)
	assert.Equal(t, "example.com/app/repro", p.Package)
	assert.Equal(t, "package example.com/app/repro did not build: repro/leak_test.go:3:28: undefined: meter.Sample", p.Message)
	assert.Contains(t, p.Excerpt, "undefined: meter.Sample")
	assert.Equal(t, []string{"TestOK"}, res.Names())
}

func TestCollectTimedOutTestIsIncompleteAndFailed(t *testing.T) {
	res := collectFile(t, "timeout.jsonl")
	assert.Equal(t, []string{"TestA", "TestSlow/sub"}, res.Names())
	slow := sectionByName(t, res, "TestSlow/sub")
	assert.Equal(t, "fail", slow.Action)
	assert.True(t, slow.Incomplete)
	assert.Contains(t, slow.Output, "panic: test timed out after 1s")
	assert.Empty(t, res.Problems, "the timeout is the section's failure, not the package's")
}

func TestCollectParentFailureAndPackageFailure(t *testing.T) {
	res := collectFile(t, "parent_fail.jsonl")
	shared := sectionByName(t, res, "TestShared")
	assert.True(t, shared.Parent)
	assert.Equal(t, "fail", shared.Action)
	assert.Contains(t, shared.Output, "daemon still running after stop")
	assert.Equal(t, "pass", sectionByName(t, res, "TestShared/one").Action)

	require.Len(t, res.Problems, 1)
	assert.Equal(t, ProblemPackage, res.Problems[0].Kind)
	assert.Equal(t, "package example.com/app/main failed outside any section (TestMain or a check after the tests): goleak: found unexpected goroutines", res.Problems[0].Message)
}

func TestCollectDryRunListsSections(t *testing.T) {
	res := collectFile(t, "dryrun.jsonl")
	assert.Equal(t, []string{"TestRepro/issue581", "TestRepro/control"}, res.Names())
	for _, s := range res.Sections {
		assert.True(t, s.Listed(), s.Test)
	}
	assert.Empty(t, res.Executed())
}

func TestCollectorReportsEachFinishedSectionOnce(t *testing.T) {
	c := NewCollector()
	var finished []string
	data, err := os.ReadFile("testdata/events/board.jsonl")
	require.NoError(t, err)
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if s := c.AddLine([]byte(line)); s != nil {
			finished = append(finished, s.Test)
		}
	}
	assert.Equal(t, c.Results().Names(), finished)
	assert.Nil(t, c.AddLine([]byte("go: warning: \"./nope/...\" matched no packages\n")))
	assert.Contains(t, c.Stray(), "matched no packages")
}

func TestOutputIsBoundedToItsTail(t *testing.T) {
	c := NewCollector()
	c.Add(Event{Action: "run", Package: "p", Test: "TestBig"})
	line := strings.Repeat("x", 1023) + "\n"
	for range 200 { // 200 KiB of output
		c.Add(Event{Action: "output", Package: "p", Test: "TestBig", Output: line})
	}
	c.Add(Event{Action: "output", Package: "p", Test: "TestBig", Output: "the cause\n"})
	s := c.Add(Event{Action: "fail", Package: "p", Test: "TestBig"})
	require.NotNil(t, s)
	elided, body := excerpt.SplitElided(s.Output)
	assert.Len(t, body, OutputLimit)
	assert.Equal(t, int64(200*1024+10-OutputLimit), elided)
	assert.True(t, strings.HasSuffix(s.Output, "the cause\n"))
}

// TestCollectRealGoTest proves the parser on the real format: it runs
// `go test -json` on a small module with passing, failing, skipping and
// attribute-setting tests, a parent with subtests, and a package that
// does not build.
func TestCollectRealGoTest(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	write("go.mod", "module example.com/fixture\n\ngo 1.26\n")
	write("fix_test.go", `package fixture

import "testing"

func TestPass(t *testing.T) { t.Log("fine") }

func TestMarked(t *testing.T) {
	t.Attr("reproboard.outcome", "INCONCLUSIVE")
	t.Attr("reproboard.artifact.chart", "/charts/x.svg")
	t.Error("metric unreadable")
}

func TestParent(t *testing.T) {
	t.Run("ok", func(t *testing.T) {})
	t.Run("bad one", func(t *testing.T) { t.Fatal("LEAK_MEASURE verdict=RED") })
	t.Run("skipped", func(t *testing.T) { t.Skip("reproboard shard 2/2: section belongs to another shard") })
}
`)
	write("broken/broken_test.go", "package broken\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) { undefinedThing() }\n")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	out, err := cmd.Output()
	require.Error(t, err, "go test must fail: the fixture has failing tests")
	require.NoError(t, ctx.Err(), "go test did not finish within 3 minutes")

	res, err := Collect(strings.NewReader(string(out)))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"TestPass", "TestMarked", "TestParent/ok", "TestParent/bad_one", "TestParent/skipped"}, res.Names())
	marked := sectionByName(t, res, "TestMarked")
	assert.Equal(t, "fail", marked.Action)
	assert.Equal(t, map[string]string{"reproboard.outcome": "INCONCLUSIVE", "reproboard.artifact.chart": "/charts/x.svg"}, marked.Attrs)
	assert.Contains(t, marked.Output, "metric unreadable")
	assert.True(t, sectionByName(t, res, "TestParent/skipped").OtherShard())
	assert.Equal(t, "pass", sectionByName(t, res, "TestPass").Action)

	require.Len(t, res.Problems, 1, "%+v", res.Problems)
	assert.Equal(t, ProblemBuild, res.Problems[0].Kind)
	assert.Contains(t, res.Problems[0].Message, "package example.com/fixture/broken did not build: ")
	assert.Contains(t, res.Problems[0].Message, "undefined: undefinedThing")

	known := []*config.KnownRed{{Test: "TestParent/bad_one", Issue: 9, Reason: "r", Signature: mustRE(t, "verdict=RED")}}
	b := Classify(res, known, Options{Board: "fixture", Gating: true, Platform: "linux/amd64"})
	got := map[string]string{}
	for _, s := range b.Sections {
		got[s.Test] = fmt.Sprint(s.Outcome)
	}
	assert.Equal(t, map[string]string{"TestPass": "GREEN", "TestMarked": "INCONCLUSIVE", "TestParent/ok": "GREEN", "TestParent/bad_one": "KNOWN-RED"}, got)
	assert.Equal(t, 1, b.ExitCode, b.ExitReason)
}

// testscript logs its own "testscript.go:N:" line after a script's skip
// message: the shard's skip must still be recognised as the harness's, so
// that the other shard's sections appear nowhere in this shard's reports.
func TestShardSkipFoundBeforeTestscriptsOwnLine(t *testing.T) {
	events := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestGuards/x"}`,
		`{"Action":"output","Package":"p","Test":"TestGuards/x","Output":"    runner.go:154: reproboard shard 1/2: section belongs to another shard\n"}`,
		`{"Action":"output","Package":"p","Test":"TestGuards/x","Output":"    testscript.go:609: \n"}`,
		`{"Action":"skip","Package":"p","Test":"TestGuards/x","Elapsed":0}`,
	}, "\n") + "\n"
	res, err := Collect(strings.NewReader(events))
	require.NoError(t, err)
	s := sectionByName(t, res, "TestGuards/x")
	assert.True(t, s.OtherShard(), "skip reason %q", s.SkipReason)
	b := Classify(res, nil, Options{Board: "g", Gating: true, Shard: "1/2"})
	assert.Empty(t, b.Skipped)
}
