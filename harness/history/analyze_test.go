package history

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reproboard/reproboard/harness/outcome"
)

// runs builds one board's runs from outcome columns: runs("GR", "RR")
// is two runs of sections A and B, A GREEN then RED, B RED both times.
// Letters: G GREEN, R RED, K KNOWN-RED, F FIXED, ~ FLAKY, I INCONCLUSIVE,
// . the section did not run.
func runs(columns ...string) []*Run {
	letters := map[byte]outcome.Outcome{'G': outcome.Green, 'R': outcome.Red, 'K': outcome.KnownRed, 'F': outcome.Fixed, '~': Flaky, 'I': outcome.Inconclusive}
	var out []*Run
	for i := range len(columns[0]) {
		r := &Run{ID: int64(i + 1), Board: "b", Time: time.Date(2026, 12, 1, 9, i, 0, 0, time.UTC), Commit: fmt.Sprintf("c%06d", i+1)}
		for j, col := range columns {
			if col[i] == '.' {
				continue
			}
			s := Section{Package: "p", Test: string(rune('A' + j)), Outcome: letters[col[i]], Attempts: 1}
			if s.Outcome == outcome.KnownRed || s.Outcome == outcome.Fixed {
				s.Issue = 500 + j
			}
			r.Sections = append(r.Sections, s)
		}
		out = append(out, r)
	}
	return out
}

func tests(cs []Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Test)
	}
	return out
}

func TestWhatChanged(t *testing.T) {
	a := Analyze(runs("GGR", "RRR", "KKF", "GGI", ".RR", "..R", "GRR"), Options{Window: 3})
	assert.Equal(t, []string{"A", "F"}, tests(a.New), "RED now, not before (F is a new section)")
	assert.Equal(t, []string{"C"}, tests(a.Fixed))
	assert.Equal(t, []string{"B", "E", "G"}, tests(a.StillRed))
	assert.Equal(t, []string{"D"}, tests(a.Changed), "GREEN to INCONCLUSIVE")
	require.Equal(t, int64(2), a.Previous.ID)

	byTest := map[string]Change{}
	for _, c := range append(append(a.StillRed, a.Fixed...), a.New...) {
		byTest[c.Test] = c
	}
	assert.Equal(t, int64(1), byTest["B"].Since.ID, "red since the first run")
	assert.True(t, byTest["B"].AtLeast, "and maybe before the window")
	assert.False(t, Analyze(runs("GGR", "RRR"), Options{Window: 30}).StillRed[0].AtLeast, "a window that is not full holds every run")
	assert.Equal(t, int64(2), byTest["E"].Since.ID, "red since it first ran")
	assert.False(t, byTest["E"].AtLeast)
	assert.Equal(t, int64(2), byTest["G"].Since.ID)
	assert.Equal(t, int64(2), byTest["C"].Since.ID, "fixed since the last run it failed in")
	assert.Equal(t, outcome.KnownRed, byTest["C"].Before)
	assert.Equal(t, outcome.Outcome(""), byTest["F"].Before)

	first := Analyze(runs("R"), Options{})
	assert.Nil(t, first.Previous)
	assert.Empty(t, first.New, "the first run has nothing to compare with")
}

func TestStripsAndFlakeRates(t *testing.T) {
	a := Analyze(runs("GRGRGR", "GGGGGG", "KKKKKF", "G~G~GG", "GG..RG"), Options{})
	flip := a.Sections[Key("p", "A")]
	assert.Equal(t, 6, flip.Present)
	assert.Equal(t, 5, flip.Flips)
	assert.InDelta(t, 5.0/6, flip.FlakeRate, 1e-9)
	assert.True(t, flip.Unstable())
	assert.Equal(t, int64(2), flip.FirstFail.ID)
	require.Len(t, flip.Cells, 6)
	assert.Equal(t, outcome.Red, flip.Cells[5].Outcome)

	steady := a.Sections[Key("p", "B")]
	assert.Zero(t, steady.Flips)
	assert.Nil(t, steady.FirstFail)

	fixed := a.Sections[Key("p", "C")]
	assert.Equal(t, 1, fixed.Flips)
	assert.False(t, fixed.Unstable(), "one change is a fix, not flakiness")

	retried := a.Sections[Key("p", "D")]
	assert.Equal(t, 2, retried.FlakyRuns)
	assert.Zero(t, retried.Flips, "FLAKY passed in the end")
	assert.True(t, retried.Unstable())

	gaps := a.Sections[Key("p", "E")]
	assert.Equal(t, 4, gaps.Present)
	assert.Equal(t, outcome.Outcome(""), gaps.Cells[2].Outcome, "a run it was not in is an empty cell")
	assert.Equal(t, 2, gaps.Flips)

	var names []string
	for _, u := range FindUnstable(runs("GRGRGR", "GGGGGG", "KKKKKF", "G~G~GG", "GG..RG")) {
		names = append(names, u.Test)
	}
	assert.Equal(t, []string{"A", "E", "D"}, names, "the most unstable first; the steady and the fixed are not listed")
	assert.Contains(t, a.Suggestions, "A is flaky: unstable in 83% of its last 6 runs (5 flips, 0 FLAKY), above 20%; fix it or quarantine it")
}

func TestSuggestClosing(t *testing.T) {
	a := Analyze(runs("KKFFFFF", "KKKKKKK"), Options{})
	assert.Equal(t, []string{"close #500: A FIXED in 5 runs since c000003"}, a.Suggestions)
	a = Analyze(runs("KKFFFFF"), Options{CloseAfter: 6})
	assert.Empty(t, a.Suggestions, "5 runs are fewer than 6")
}

func TestTrends(t *testing.T) {
	rs := runs("KKF")
	for i, r := range rs {
		var sens *float64
		if i > 0 {
			sens = fl(200)
		}
		r.Sections[0].Measures = []Measure{{Metric: "uss", Unit: "bytes", Slope: fl(float64(5000 - 2000*i)), Budget: "2KiB/op", Sensitivity: sens, Verdict: outcome.Red}}
	}
	a := Analyze(rs, Options{})
	tr := a.Sections[Key("p", "A")].Trends
	require.Len(t, tr, 1)
	assert.Equal(t, "uss", tr[0].Metric)
	require.Len(t, tr[0].Points, 3)
	assert.Equal(t, 1000.0, *tr[0].Points[2].Slope)
	assert.Nil(t, tr[0].Points[0].Sensitivity, "sensitivity is optional")
	assert.Equal(t, "c000003", tr[0].Points[2].Run.Commit)
}

func TestParseMeasures(t *testing.T) {
	ms := ParseMeasures("LEAK_MEASURE metric=uss unit=bytes warmup=40 samples=[40:1,50:2] slope=5222.4 late=5017.6 budget=4KiB/op verdict=RED\n" +
		"LEAK_MEASURE metric=fds unit=count warmup=0 samples=[] slope=NaN late=NaN budget=2/op verdict=INCONCLUSIVE sensitivity=0.5\n" +
		"LIFECYCLE_MEASURE metric=goroutines unit=count warmup=0 samples=[] slope=0 late=0 budget=0/op verdict=GREEN\n" +
		"LEAK_MEASURE op=query slope=5.1KiB/op verdict=RED")
	require.Len(t, ms, 2, "the LEAK_MEASURE lines that parse")
	assert.Equal(t, Measure{Metric: "uss", Unit: "bytes", Slope: fl(5222.4), Budget: "4KiB/op", Verdict: outcome.Red}, ms[0])
	assert.Nil(t, ms[1].Slope, "NaN is no slope")
	require.NotNil(t, ms[1].Sensitivity)
	assert.Equal(t, 0.5, *ms[1].Sensitivity)
}
