package board

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/reproboard/reproboard/harness/config"
	"github.com/reproboard/reproboard/harness/outcome"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustRE(t *testing.T, s string) *regexp.Regexp {
	t.Helper()
	re, err := regexp.Compile(s)
	require.NoError(t, err)
	return re
}

func fixtureKnown(t *testing.T) []*config.KnownRed {
	t.Helper()
	cfg, err := config.Load("testdata/board.yaml")
	require.NoError(t, err)
	return cfg.KnownRed
}

// only keeps the fixture's sections named, to build a board of them.
func only(res *Results, tests ...string) *Results {
	out := &Results{Sections: []SectionResult{}}
	for _, s := range res.Sections {
		if slices.Contains(tests, s.Test) {
			out.Sections = append(out.Sections, s)
		}
	}
	return out
}

func TestClassifyEveryOutcome(t *testing.T) {
	res := collectFile(t, "board.jsonl")
	b := Classify(res, fixtureKnown(t), Options{Board: "all", Target: "demod", Gating: true, Platform: "linux/amd64"})

	type want struct {
		outcome outcome.Outcome
		issue   int
		reason  string
	}
	wants := map[string]want{
		"TestGuards/daemon/lifecycle": {outcome.Green, 0, ""},
		"TestGuards/daemon/stop":      {outcome.SetupFail, 0, "daemon start: exit status 1"},
		"TestGuards/query/rss":        {outcome.Inconclusive, 0, "metric unreadable: /proc/4242/smaps_rollup: permission denied"},
		"TestRepro/issue581":          {outcome.KnownRed, 581, "query-path memory growth: unbounded per-session result cache"},
		"TestRepro/issue600":          {outcome.Red, 600, "known-red #600 but the failure signature changed: someone must look"},
		"TestRepro/issue700":          {outcome.Fixed, 700, "now GREEN — promote to a guard, drop the known_red entry, close #700"},
		"TestRepro/issue710":          {outcome.Inconclusive, 0, "the operation never succeeded: 0 of 40 queries answered"},
		"TestRepro/control":           {outcome.Green, 0, ""},
		"TestRepro/issue800":          {outcome.Red, 0, "repro.go:80: fd count grows: verdict=RED"}, // its entry is darwin-only
	}
	require.Len(t, b.Sections, len(wants))
	for _, s := range b.Sections {
		w, ok := wants[s.Test]
		require.True(t, ok, s.Test)
		assert.Equal(t, w.outcome, s.Outcome, s.Test)
		assert.Equal(t, w.issue, s.Issue, s.Test)
		assert.Equal(t, w.reason, s.Reason, s.Test)
		if s.Outcome == outcome.Green {
			assert.Empty(t, s.Excerpt, s.Test)
		}
	}
	leak := b.Sections[slices.IndexFunc(b.Sections, func(s Section) bool { return s.Test == "TestRepro/issue581" })]
	assert.Equal(t, "LEAK_MEASURE op=query batches=8 slope=5.1KiB/op budget=4KiB/op verdict=RED", leak.Measure)
	assert.Equal(t, map[string]string{"chart": "charts/issue581.svg", "samples": "charts/issue581.samples.json"}, leak.Artifacts)
	assert.Contains(t, leak.Excerpt, "query-path memory grows")
	assert.Equal(t, 12.04, leak.Duration)

	assert.Equal(t, []Skipped{{Package: "example.com/app/repro", Test: "TestRepro/darwin_only", Reason: "needs darwin: kqueue semantics"}}, b.Skipped)
	assert.Equal(t, Counts{"total": 9, "GREEN": 2, "RED": 2, "KNOWN-RED": 1, "FIXED": 1, "SETUP-FAIL": 1, "INCONCLUSIVE": 2, "FLAKY": 0}, b.Counts)
	assert.Equal(t, 1, b.ExitCode)
	assert.Equal(t, "regression: 2 RED, 2 INCONCLUSIVE", b.ExitReason)
	assert.True(t, slices.IsSortedFunc(b.Sections, func(x, y Section) int {
		return strings.Compare(x.Package+" "+x.Test, y.Package+" "+y.Test)
	}))
}

func TestExitCodes(t *testing.T) {
	res := collectFile(t, "board.jsonl")
	known := fixtureKnown(t)
	for _, tc := range []struct {
		name     string
		tests    []string
		gating   bool
		strict   bool
		platform string
		code     int
		reason   string
	}{
		{"known-red is ok on a gating board", []string{"TestRepro/issue581", "TestRepro/control"}, true, false, "", 0, "ok: nothing regressed"},
		{"changed signature is RED and fails a gating board", []string{"TestRepro/issue600"}, true, false, "", 1, "regression: 1 RED"},
		{"RED on a non-gating board exits 0", []string{"TestRepro/issue600", "TestRepro/issue800"}, false, false, "", 0, "ok: a non-gating board reports 2 RED without failing (redness is the data)"},
		{"FIXED exits 0", []string{"TestRepro/issue700"}, true, false, "", 0, "ok, but 1 known-red section(s) now pass: FIXED, promote them"},
		{"FIXED under strict exits 1", []string{"TestRepro/issue700"}, false, true, "", 1, "regression: 1 FIXED under --strict"},
		{"zero sections exit 2", nil, true, false, "", 2, "no section ran: nothing was verified"},
		{"SETUP-FAIL alone exits 2", []string{"TestGuards/daemon/stop", "TestGuards/daemon/lifecycle"}, true, false, "", 2, "setup failure, nothing regressed but not everything was verified: 1 SETUP-FAIL"},
		{"SETUP-FAIL and RED on a gating board exit 1", []string{"TestGuards/daemon/stop", "TestRepro/issue800"}, true, false, "", 1, "regression: 1 RED"},
		{"SETUP-FAIL and RED on a non-gating board exit 2", []string{"TestGuards/daemon/stop", "TestRepro/issue800"}, false, false, "", 2, "setup failure, nothing regressed but not everything was verified: 1 SETUP-FAIL"},
		{"INCONCLUSIVE fails a gating board", []string{"TestGuards/query/rss"}, true, false, "", 1, "regression: 1 INCONCLUSIVE"},
		{"INCONCLUSIVE is reported on a non-gating board", []string{"TestRepro/issue710"}, false, false, "", 0, "ok: a non-gating board reports 1 INCONCLUSIVE without failing (redness is the data)"},
		{"a darwin-only entry whitelists on darwin", []string{"TestRepro/issue800"}, true, false, "darwin/arm64", 0, "ok: nothing regressed"},
		{"a darwin-only entry does not whitelist on linux", []string{"TestRepro/issue800"}, true, false, "linux/arm64", 1, "regression: 1 RED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Classify(only(res, tc.tests...), known, Options{Board: "b", Gating: tc.gating, Strict: tc.strict, Platform: tc.platform})
			assert.Equal(t, tc.code, b.ExitCode)
			assert.Equal(t, tc.reason, b.ExitReason)
			assert.Equal(t, len(tc.tests), b.Counts["total"])
		})
	}
}

func TestPlatformRestrictedEntry(t *testing.T) {
	res := only(collectFile(t, "board.jsonl"), "TestRepro/issue800")
	known := fixtureKnown(t)
	onDarwin := Classify(res, known, Options{Platform: "darwin/amd64"}).Sections[0]
	assert.Equal(t, outcome.KnownRed, onDarwin.Outcome)
	assert.Equal(t, 800, onDarwin.Issue)
	onLinux := Classify(res, known, Options{Platform: "linux/amd64"}).Sections[0]
	assert.Equal(t, outcome.Red, onLinux.Outcome)
	assert.Zero(t, onLinux.Issue, "an entry for another platform does not apply at all")
}

func TestBuildFailureExits2AndSaysSo(t *testing.T) {
	res := collectFile(t, "build_fail.jsonl")
	b := Classify(res, nil, Options{Board: "bug-repro", Gating: false})
	assert.Equal(t, 2, b.ExitCode)
	assert.Equal(t, "setup failure, nothing regressed but not everything was verified: package example.com/app/repro did not build: repro/leak_test.go:3:28: undefined: meter.Sample", b.ExitReason)

	only := Classify(&Results{Problems: res.Problems}, nil, Options{Board: "bug-repro"})
	assert.Equal(t, 2, only.ExitCode)
	assert.Equal(t, "no section ran: nothing was verified; package example.com/app/repro did not build: repro/leak_test.go:3:28: undefined: meter.Sample", only.ExitReason)
}

func TestIncompleteAndParentSectionsAreRED(t *testing.T) {
	b := Classify(collectFile(t, "timeout.jsonl"), nil, Options{Gating: true})
	slow := b.Sections[1]
	assert.Equal(t, "TestSlow/sub", slow.Test)
	assert.Equal(t, outcome.Red, slow.Outcome)
	assert.Equal(t, "did not finish: the test binary stopped while it ran: panic: test timed out after 1s", slow.Reason)

	b = Classify(collectFile(t, "parent_fail.jsonl"), nil, Options{Gating: false})
	var reasons []string
	for _, s := range b.Sections {
		reasons = append(reasons, s.Test+": "+string(s.Outcome)+": "+s.Reason)
	}
	assert.Equal(t, []string{
		"TestOK: GREEN: ",
		"TestShared: RED: the parent test failed outside its subtests: shared_test.go:30: cleanup: daemon still running after stop",
		"TestShared/one: GREEN: ",
	}, reasons)
	assert.Equal(t, 2, b.ExitCode, "the package failure outside any section is a problem: %s", b.ExitReason)
}

func TestListedSectionsThatNeverRanAreAProblem(t *testing.T) {
	res := only(collectFile(t, "board.jsonl"), "TestRepro/control")
	b := Classify(res, nil, Options{Gating: false, Expected: []string{"TestRepro/control", "TestRepro/issue581", "TestRepro/gone"}})
	require.Len(t, b.Problems, 1)
	assert.Equal(t, ProblemNotRun, b.Problems[0].Kind)
	assert.Equal(t, "2 listed section(s) never ran, the test binary stopped before them (see the failures above): TestRepro/issue581, TestRepro/gone", b.Problems[0].Message)
	assert.Equal(t, 2, b.ExitCode)
}

func TestAnEmptyShardLeavesTheVerdictToTheMerge(t *testing.T) {
	key := &RunKey{Config: "sha256:c", Listing: "sha256:l"}
	b := Classify(&Results{}, nil, Options{Gating: true, Shard: "2/3", Run: key})
	assert.Equal(t, 0, b.ExitCode)
	assert.Equal(t, "shard 2/3 holds no section of this board; the merge of all shards decides", b.ExitReason)

	var parts []*Board
	for k := 1; k <= 3; k++ {
		parts = append(parts, Classify(&Results{}, nil, Options{Gating: true, Shard: fmt.Sprintf("%d/3", k), Run: key}))
	}
	merged, err := Merge(parts, []string{"a.json", "b.json", "c.json"}, MergeOptions{})
	require.NoError(t, err)
	assert.Equal(t, 2, merged.ExitCode, "no shard verified anything")

	b = Classify(&Results{Problems: []Problem{{Kind: ProblemBuild, Message: "package p did not build: x"}}}, nil, Options{Gating: true, Shard: "2/3"})
	assert.Equal(t, 2, b.ExitCode)
}

func TestShardAndDryRunSkipsAreInvisible(t *testing.T) {
	b := Classify(collectFile(t, "dryrun.jsonl"), nil, Options{Gating: true})
	assert.Empty(t, b.Sections)
	assert.Empty(t, b.Skipped)
	assert.Equal(t, 2, b.ExitCode)
}

func TestFailureReasonPicksTheLineThatSaysWhy(t *testing.T) {
	for _, tc := range []struct{ out, want string }{
		{"    x_test.go:3: starting\n    x_test.go:9: want 1, got 2\n", "x_test.go:9: want 1, got 2"},
		{"    x_test.go:3: starting\npanic: boom [recovered]\n\tgoroutine 1\n", "panic: boom [recovered]"},
		{"    testscript.go:609: WORK=$WORK\n        > target daemon start\n        FAIL: testdata/a.txtar:15: no match for `x` found in stdout\n        \n    FAIL\n", "FAIL: testdata/a.txtar:15: no match for `x` found in stdout"},
		{"some text\nFAIL\n", "some text"},
		{"", "failed without a message (see the excerpt)"},
	} {
		s := ClassifySection(SectionResult{Test: "TestX", Action: "fail", Output: tc.out}, nil, "")
		assert.Equal(t, tc.want, s.Reason)
	}
}

func TestMeasureKeepsEveryMetricOnce(t *testing.T) {
	out := "    leak.go:9: LEAK_MEASURE metric=uss slope=3 verdict=RED\n" +
		"    leak.go:9: LEAK_MEASURE metric=wal slope=0 verdict=GREEN\n" +
		"        \t    nested: LEAK_MEASURE metric=uss slope=3 verdict=RED\n"
	s := ClassifySection(SectionResult{Test: "TestX", Action: "fail", Output: out}, nil, "")
	assert.Equal(t, "LEAK_MEASURE metric=uss slope=3 verdict=RED\nLEAK_MEASURE metric=wal slope=0 verdict=GREEN", s.Measure)

	s = ClassifySection(SectionResult{Test: "TestX", Action: "fail", Output: out, Attrs: map[string]string{outcome.AttrMeasure: "the attr wins"}}, nil, "")
	assert.Equal(t, "the attr wins", s.Measure)
}

// A section the backstop had to clean up after says so, whatever its outcome.
func TestClassifyNamesBackstopCleanup(t *testing.T) {
	r := SectionResult{Package: "p", Test: "TestGuards/daemon/x", Action: "pass", Attrs: map[string]string{
		outcome.AttrOutcome:  "GREEN",
		outcome.AttrBackstop: "stopped left-over processes: pid 4242",
	}}
	s := ClassifySection(r, nil, config.Platform())
	assert.Equal(t, outcome.Green, s.Outcome)
	assert.Equal(t, "backstop stopped left-over processes: pid 4242", s.Reason)

	r.Action = "fail"
	r.Attrs[outcome.AttrReason] = "storm of 6 failed"
	s = ClassifySection(r, nil, config.Platform())
	assert.Equal(t, outcome.Red, s.Outcome)
	assert.Equal(t, "storm of 6 failed; backstop stopped left-over processes: pid 4242", s.Reason)
}
