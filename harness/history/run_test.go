package history

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/outcome"
)

func TestFromBoard(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	b := &board.Board{Name: "guards", Target: "demod", Platform: "linux/amd64", ExitCode: 0,
		RunInfo: &board.RunInfo{Time: at, Duration: 12.5, Commit: "abc", Branch: "main", GoVersion: "go1.26.0", TargetHash: "sha256:00"},
		Sections: []board.Section{
			{Package: "p", Test: "TestA", Outcome: outcome.Flaky, Duration: 1, Attempts: []board.Attempt{{Outcome: outcome.Red}, {Outcome: outcome.Green}}},
			{Package: "p", Test: "TestB", Outcome: outcome.KnownRed, Issue: 581, Reason: "leak",
				Measure: "LEAK_MEASURE metric=uss unit=bytes warmup=0 samples=[] slope=12 late=0 budget=2KiB/op verdict=RED sensitivity=3"},
		}}
	r := FromBoard(b)
	assert.Equal(t, at, r.Time)
	assert.Equal(t, "abc", r.Commit)
	assert.Equal(t, "sha256:00", r.TargetHash)
	require.Len(t, r.Sections, 2)
	assert.Equal(t, 2, r.Sections[0].Attempts, "a re-run section counts its attempts")
	assert.Equal(t, 1, r.Sections[1].Attempts)
	require.Len(t, r.Sections[1].Measures, 1)
	assert.Equal(t, 3.0, *r.Sections[1].Measures[0].Sensitivity)
}
