package board

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/reproboard/reproboard/harness/outcome"
)

func TestRerunOutcomes(t *testing.T) {
	red := Section{Test: "TestG/x", Outcome: outcome.Red, Reason: "deadline 2s passed", Duration: 2, Excerpt: "boom"}
	green := Section{Test: "TestG/x", Outcome: outcome.Green, Duration: 1}

	f := Rerun(red, []Section{green})
	assert.Equal(t, outcome.Flaky, f.Outcome)
	assert.Equal(t, "failed, then passed on re-run 1 of 1; first: deadline 2s passed", f.Reason)
	assert.Equal(t, []Attempt{{outcome.Red, "deadline 2s passed", 2}, {outcome.Green, "", 1}}, f.Attempts)
	assert.Equal(t, "boom", f.Excerpt, "the failure's output stays")

	r := Rerun(red, []Section{red, red})
	assert.Equal(t, outcome.Red, r.Outcome)
	assert.Len(t, r.Attempts, 3)
	assert.Equal(t, "failed all 3 attempts; first: deadline 2s passed", r.Reason)

	known := Section{Test: "TestG/x", Outcome: outcome.KnownRed, Issue: 581, Reason: "the known bug"}
	k := Rerun(red, []Section{known})
	assert.Equal(t, outcome.KnownRed, k.Outcome, "fails the known way on a re-run: the known bug")
	assert.Equal(t, 581, k.Issue)
	assert.Len(t, k.Attempts, 2)

	assert.True(t, NeedsRerun(red))
	assert.True(t, NeedsRerun(Section{Outcome: outcome.Inconclusive}))
	for _, o := range []outcome.Outcome{outcome.KnownRed, outcome.Fixed, outcome.Green, outcome.SetupFail} {
		assert.False(t, NeedsRerun(Section{Outcome: o}), o)
	}
}

func TestFlakyGatesOnlyUnderStrict(t *testing.T) {
	b := &Board{Gating: true, Sections: []Section{{Test: "TestG/x", Outcome: outcome.Flaky}}}
	b.Score()
	assert.Equal(t, 0, b.ExitCode)
	assert.Equal(t, "ok, but 1 section(s) FLAKY: failed, then passed on a re-run; see every attempt", b.ExitReason)
	b.Strict = true
	b.Score()
	assert.Equal(t, 1, b.ExitCode)
	assert.Equal(t, "regression: 1 FLAKY under --strict", b.ExitReason)
}
