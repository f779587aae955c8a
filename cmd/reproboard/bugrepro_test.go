package main

import (
	"encoding/base64"
	"encoding/json"
	stdhtml "html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The real bug-repro board of this repository, against the demo target,
// run twice: as shipped, #581 is KNOWN-RED by its pinned signature, and
// the HTML page parses and holds the repro's charts inline; then with the
// bug fixed (DEMOD_FIX_581=1), and the history remembers both runs: the
// second run's reports lead with #581 fixed since the first run's commit,
// a strip of two outcomes and a trend of each slope.
func TestRealBugReproBoard(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real bug-repro board")
	}
	out := t.TempDir()
	hist := filepath.Join(out, "history.db")
	const first, second = "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	t.Setenv("GITHUB_SHA", first)
	t.Setenv("GITHUB_REF_NAME", "main")
	html := filepath.Join(out, "board.html")
	code, stdout, stderr := invoke(t, "run", "--config", "../../boards.yaml", "--out", out, "--history", hist,
		"--html", html, "--json", filepath.Join(out, "board.json"), "bug-repro")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Regexp(t, `KNOWN-RED\s+#581\s+\S+\s+TestRepro/issue581`, stdout)
	b := readBoard(t, filepath.Join(out, "board.json"))
	require.NotNil(t, b.RunInfo, "the board JSON has its run")
	assert.Equal(t, first, b.RunInfo.Commit)
	assert.Equal(t, "main", b.RunInfo.Branch)
	assert.NotEmpty(t, b.RunInfo.GoVersion)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, b.RunInfo.TargetHash)

	page, err := os.ReadFile(html)
	require.NoError(t, err)
	parseXML(t, page)
	charts := images(t, page, "chart")
	require.Len(t, charts, 2, "the uss and the WAL chart of #581")
	var titles []string
	for _, svg := range charts {
		m := regexp.MustCompile(`<title>([^<]*)</title>|<text[^>]*class="title"[^>]*>([^<]*)<`).FindStringSubmatch(svg)
		if m != nil {
			titles = append(titles, m[1]+m[2])
		}
		assert.Contains(t, svg, "RED", "the chart shows the verdict")
	}
	joined := strings.Join(titles, "\n")
	assert.Contains(t, joined, "RED uss slope=", "the USS chart")
	assert.Contains(t, joined, "RED file:cache/**/*.db-wal slope=", "the WAL chart")

	// The fix, at the next commit.
	t.Setenv("GITHUB_SHA", second)
	t.Setenv("DEMOD_FIX_581", "1")
	md := filepath.Join(out, "board2.md")
	html2 := filepath.Join(out, "board2.html")
	code, stdout, stderr = invoke(t, "run", "--config", "../../boards.yaml", "--out", out, "--history", hist,
		"--html", html2, "--md", md, "bug-repro")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.True(t, strings.HasPrefix(stdout, "what changed since 1111111 (run 1, "), "the terminal leads with what changed:\n%s", stdout)
	assert.Regexp(t, `fixed\s+FIXED\s+#581\s+TestRepro/issue581\s+was KNOWN-RED; fixed since 1111111 \(run 1, `, stdout)

	code, stdout, stderr = invoke(t, "history", "--history", hist, "TestRepro/issue581")
	require.Equal(t, 0, code, stderr)
	const sens = `( \(sensitivity [0-9.e+]+\))?`
	assert.Regexp(t, `(?s)1 .* 1111111 +KNOWN-RED .*uss=[0-9.]+/op RED`+sens+`, file:cache/\*\*/\*\.db-wal=[0-9.]+/op RED`+sens+`\n`+
		`2 .* 2222222 +FIXED .*uss=[0-9.]+/op GREEN`+sens+`, file:cache/\*\*/\*\.db-wal=[0-9.]+/op GREEN`+sens+`\n`, stdout)
	code, stdout, stderr = invoke(t, "history", "--history", hist, "--json", "TestRepro/issue581")
	require.Equal(t, 0, code, stderr)
	var sections []sectionRuns
	require.NoError(t, json.Unmarshal([]byte(stdout), &sections), stdout)
	require.Len(t, sections, 1)
	require.Len(t, sections[0].Runs, 2, "the history holds both runs")
	for i, want := range []string{"KNOWN-RED", "FIXED"} {
		r := sections[0].Runs[i]
		assert.Equal(t, want, string(r.Outcome))
		require.Len(t, r.Measures, 2)
		for _, m := range r.Measures {
			assert.NotNil(t, m.Slope, "run %d %s has its slope", i+1, m.Metric)
			assert.NotNil(t, m.Sensitivity, "run %d %s has its sensitivity", i+1, m.Metric)
		}
	}
	assert.Greater(t, *sections[0].Runs[0].Measures[0].Slope, *sections[0].Runs[1].Measures[0].Slope, "the fix brings the uss slope down")

	text, err := os.ReadFile(md)
	require.NoError(t, err)
	fixed := strings.Index(string(text), "| ✅ fixed | **FIXED** | #581 | `TestRepro/issue581` | was KNOWN-RED; fixed since 1111111 (run 1, ")
	table := strings.Index(string(text), "| outcome | issue | duration | section | reason |")
	require.Positive(t, fixed, string(text))
	assert.Less(t, fixed, table, "what changed comes before the board's table")

	page, err = os.ReadFile(html2)
	require.NoError(t, err)
	parseXML(t, page)
	strip := regexp.MustCompile(`<td class="strip">(.*?)</td>`).FindAllStringSubmatch(string(page), -1)
	require.Len(t, strip, 1, "one section, one strip")
	cells := regexp.MustCompile(`<a class="cell ([A-Z-]+)"`).FindAllStringSubmatch(strip[0][1], -1)
	require.Len(t, cells, 2, "a strip of two cells")
	assert.Equal(t, "KNOWN-RED", cells[0][1])
	assert.Equal(t, "FIXED", cells[1][1])
	trends := images(t, page, "trend")
	require.Len(t, trends, 2, "a trend chart per leak measure")
	assert.Contains(t, trends[0], "uss slope per run, 2 run(s)")
	assert.Contains(t, trends[0], "dashed: sensitivity")
	assert.Equal(t, 2, strings.Count(trends[0], "h0"), "a dot per run")
	assert.Len(t, images(t, page, "chart"), 2, "beside the current run's samples charts")
}

// images are the SVG documents of a page's <img class="class"> data URLs.
func images(t *testing.T, page []byte, class string) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile(`<img class="`+class+`"[^>]* src="([^"]+)"`).FindAllStringSubmatch(string(page), -1) {
		data, ok := strings.CutPrefix(stdhtml.UnescapeString(m[1]), "data:image/svg+xml;base64,")
		require.True(t, ok, "an inline chart: %.80s", m[1])
		svg, err := base64.StdEncoding.DecodeString(data)
		require.NoError(t, err)
		out = append(out, string(svg))
	}
	return out
}
