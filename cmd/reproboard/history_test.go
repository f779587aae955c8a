package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/outcome"
	"github.com/reproboard/reproboard/harness/report"
)

// shardReport writes the JSON report of a one-shard run of board guards
// whose sections have the outcomes given, as merge reads it.
func shardReport(t *testing.T, dir string, n int, outs map[string]outcome.Outcome) string {
	t.Helper()
	b := &board.Board{Schema: board.Schema, Name: "guards", Target: "demod", Gating: true, Platform: "linux/amd64", Shard: "1/1",
		Run:     &board.RunKey{Config: "sha256:c", Listing: "sha256:l"}, // merge checks the shard set
		RunInfo: &board.RunInfo{Time: time.Date(2026, 12, 1, 10, n, 0, 0, time.UTC), Duration: 2, Commit: fmt.Sprintf("%07d%033d", n, 0)}}
	var listed []string
	for test, o := range outs {
		b.Sections = append(b.Sections, board.Section{Package: "example.com/app/guards", Test: test, Outcome: o, Duration: 0.5, Artifacts: map[string]string{}})
		listed = append(listed, test)
	}
	sort.Strings(listed)
	b.Run = &board.RunKey{Config: "sha256:0", Listing: board.ListingDigest(listed), Assigned: listed}
	b.Score()
	p := filepath.Join(dir, fmt.Sprintf("run%d.json", n))
	require.NoError(t, writeFile(p, func(w io.Writer) error { return report.WriteJSON(w, b) }))
	return p
}

// A section that flips over 6 runs (merged, as CI records them) gets a
// flake rate, is suggested, and is what flaky lists; a section that
// stays GREEN is not.
func TestFlakySectionOverSixRuns(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	t.Setenv("GITHUB_STEP_SUMMARY", "")
	dir := t.TempDir()
	hist := filepath.Join(dir, "history.db")
	var html, md string
	for n := 1; n <= 6; n++ {
		flip := outcome.Green
		if n%2 == 0 {
			flip = outcome.Red
		}
		p := shardReport(t, dir, n, map[string]outcome.Outcome{"TestFlip/x": flip, "TestSteady/y": outcome.Green})
		html, md = filepath.Join(dir, fmt.Sprintf("run%d.html", n)), filepath.Join(dir, fmt.Sprintf("run%d.md", n))
		code, stdout, stderr := invoke(t, "merge", "--out", dir, "--history", hist, "--html", html, "--md", md, p)
		want := 0
		if flip == outcome.Red {
			want = 1
		}
		require.Equal(t, want, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		if n == 6 {
			assert.Contains(t, stdout, "what changed since 0000005 (run 5, 2026-12-01 10:05)\n")
			assert.Regexp(t, `new RED\s+RED\s+TestFlip/x\s+was GREEN`, stdout)
		}
	}
	code, stdout, stderr := invoke(t, "flaky", "--history", hist)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `83%\s+5\s+0\s+6\s+guards\s+TestFlip/x\s+GRGRGR\n`, stdout)
	assert.NotContains(t, stdout, "TestSteady")

	code, stdout, stderr = invoke(t, "flaky", "--history", hist, "--json", "--window", "3")
	require.Equal(t, 0, code, stderr)
	var list []struct {
		Test      string  `json:"test"`
		Runs      int     `json:"runs"`
		Flips     int     `json:"flips"`
		FlakeRate float64 `json:"flake_rate"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &list), stdout)
	require.Len(t, list, 1)
	assert.Equal(t, "TestFlip/x", list[0].Test)
	assert.Equal(t, 3, list[0].Runs, "the window is the last 3 runs")
	assert.Equal(t, 2, list[0].Flips)

	code, stdout, stderr = invoke(t, "history", "--history", hist, "--board", "guards", "TestFlip/x")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 2+6, strings.Count(stdout, "\n"), "a heading, the columns, a line per run:\n%s", stdout)
	assert.Regexp(t, `(?s)0000001 +GREEN .*0000002 +RED .*0000006 +RED`, stdout)

	page, err := os.ReadFile(html)
	require.NoError(t, err)
	parseXML(t, page)
	assert.Contains(t, string(page), "83% (5 flips, 0 FLAKY) over 6 runs")
	assert.Contains(t, string(page), "<li>TestFlip/x is flaky: unstable in 83% of its last 6 runs (5 flips, 0 FLAKY), above 20%; fix it or quarantine it</li>")
	assert.Contains(t, string(page), `<a class="cell RED" href="#run6"`, "each cell links its run")
	assert.Contains(t, string(page), `<tr id="run6">`)
	text, err := os.ReadFile(md)
	require.NoError(t, err)
	assert.Contains(t, string(text), "- 💡 TestFlip/x is flaky")

	code, _, stderr = invoke(t, "flaky", "--history", hist, "--board", "nope")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `has no run of board "nope"; it has guards`)
	code, _, stderr = invoke(t, "history", "--history", filepath.Join(dir, "missing.db"))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "no history at "+filepath.Join(dir, "missing.db"))
}

// A history file that is not one (a cache restored half-way, a wrong
// path) is said, left as it is, and the board still reports, saying
// history is unavailable.
func TestCorruptHistoryStillReports(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	t.Setenv("GITHUB_STEP_SUMMARY", "")
	dir := t.TempDir()
	hist := filepath.Join(dir, "history.db")
	garbage := []byte(strings.Repeat("not a database\n", 500))
	require.NoError(t, os.WriteFile(hist, garbage, 0o644))
	p := shardReport(t, dir, 1, map[string]outcome.Outcome{"TestA": outcome.Green, "TestB": outcome.Red})
	html, md, js := filepath.Join(dir, "b.html"), filepath.Join(dir, "b.md"), filepath.Join(dir, "b.json")
	code, stdout, stderr := invoke(t, "merge", "--out", dir, "--history", hist, "--html", html, "--md", md, "--json", js, p)
	assert.Equal(t, 1, code, "the board's own verdict: TestB is RED on a gating board")
	assert.Contains(t, stderr, "reproboard: history "+hist+" is unusable: not a SQLite database, or a damaged one")
	assert.Contains(t, stderr, "move it away (a new history starts) or point history: / --history at another file")
	assert.Contains(t, stdout, "history unavailable: history "+hist+" is unusable")
	assert.Regexp(t, `RED\s+TestB`, stdout, "the board is reported")
	text, err := os.ReadFile(md)
	require.NoError(t, err)
	assert.Contains(t, string(text), "⚠️ history unavailable: history "+hist+" is unusable")
	page, err := os.ReadFile(html)
	require.NoError(t, err)
	parseXML(t, page)
	assert.Contains(t, string(page), `<p class="unavailable">history unavailable: history `+hist)
	assert.Equal(t, outcome.Red, readBoard(t, js).Sections[1].Outcome)
	after, err := os.ReadFile(hist)
	require.NoError(t, err)
	assert.Equal(t, garbage, after, "a file that is not a history is never written")

	// --no-history: nothing said, nothing opened.
	code, stdout, stderr = invoke(t, "merge", "--out", dir, "--no-history", "--history", hist, p)
	assert.Equal(t, 1, code)
	assert.NotContains(t, stdout+stderr, "history")
}
