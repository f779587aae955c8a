package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/config"
	"github.com/reproboard/reproboard/harness/outcome"
	"github.com/reproboard/reproboard/harness/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const chartSVG = `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="100" height="50"><polyline points="0,50 50,25 100,0" fill="none" stroke="red"/></svg>
`

// fixtureReports classifies the board package's event fixture as two
// boards, guards (gating, exit 1) and bug-repro (non-gating, exit 0), and
// writes their JSON reports into a new directory with the repro's chart
// next to them, as a run's --out holds them. edit, when set, changes each
// board before it is written.
func fixtureReports(t *testing.T, edit func(*board.Board)) (dir string, files []string) {
	t.Helper()
	cfg, err := config.Load(filepath.Join("..", "..", "harness", "board", "testdata", "board.yaml"))
	require.NoError(t, err)
	f, err := os.Open(filepath.Join("..", "..", "harness", "board", "testdata", "events", "board.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	res, err := board.Collect(f)
	require.NoError(t, err)

	dir = t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "charts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "charts", "issue581.svg"), []byte(chartSVG), 0o644))
	for _, bd := range []struct {
		name, pkg string
		gating    bool
	}{{"guards", "example.com/app/guards", true}, {"bug-repro", "example.com/app/repro", false}} {
		mine := &board.Results{}
		for _, s := range res.Sections {
			if s.Package == bd.pkg {
				mine.Sections = append(mine.Sections, s)
			}
		}
		b := board.Classify(mine, cfg.KnownRed, board.Options{Board: bd.name, Target: "demod", Gating: bd.gating, Platform: "linux/amd64"})
		if edit != nil {
			edit(b)
		}
		p := filepath.Join(dir, bd.name+".json")
		require.NoError(t, writeFile(p, func(w io.Writer) error { return report.WriteJSON(w, b) }))
		files = append(files, p)
	}
	return dir, files
}

// TestReportsOfTwoBoards drives the CLI in-process over two boards'
// classified fixtures (merge reads them as a run writes them): one HTML
// page and one Markdown document hold both, JSON stays per board.
func TestReportsOfTwoBoards(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	dir, files := fixtureReports(t, nil)
	reports := t.TempDir()
	summary := filepath.Join(reports, "summary.md")
	t.Setenv("GITHUB_STEP_SUMMARY", summary)
	htmlPath, mdPath := filepath.Join(reports, "board.html"), filepath.Join(reports, "board.md")

	code, stdout, stderr := invoke(t, append([]string{"merge", "--no-history", "--out", reports, "--html", htmlPath, "--md", mdPath,
		"--json", filepath.Join(reports, "board.json")}, files...)...)
	assert.Equal(t, 1, code, "the gating board has an INCONCLUSIVE section; stderr:\n%s", stderr)
	assert.Empty(t, stderr)
	assert.True(t, strings.HasSuffix(stdout, "\n2 boards (guards exit 1, bug-repro exit 0) — exit 1: regression on board guards\n"), stdout)

	// One page, both boards in order, the overall exit first, the chart inline.
	page, err := os.ReadFile(htmlPath)
	require.NoError(t, err)
	parseXML(t, page)
	html := string(page)
	assert.Contains(t, html, `<h1>reproboard: 2 boards, <span class="exit1">exit 1</span> (regression)</h1>`)
	assert.Contains(t, html, `<p class="verdict">regression on board guards</p>`)
	g := strings.Index(html, `<h2>board guards: <span class="exit1">exit 1</span> (regression)</h2>`)
	r := strings.Index(html, `<h2>board bug-repro: <span class="exit0">exit 0</span> (green)</h2>`)
	require.Positive(t, g)
	require.Greater(t, r, g)
	assert.Less(t, strings.Index(html, `<table class="overview">`), g, "the overall header comes first")
	assert.Equal(t, 1, strings.Count(html, `src="data:image/svg&#43;xml;base64,`), "the leak chart is embedded")
	assert.Greater(t, strings.Index(html, `src="data:image/svg&#43;xml;base64,`), r, "in the repro board's section")
	assert.NotContains(t, html, filepath.Join(dir, "charts", "issue581.svg")+" not shown")

	// One Markdown document: the overall line, then each board.
	md, err := os.ReadFile(mdPath)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(md), "## ❌ reproboard — exit 1 (regression)\n\nregression on board guards.\n"), string(md))
	gm := strings.Index(string(md), "\n### ❌ board guards — exit 1\n")
	rm := strings.Index(string(md), "\n### ✅ board bug-repro — exit 0\n")
	require.Positive(t, gm)
	require.Greater(t, rm, gm)
	assert.Less(t, len(md), report.MarkdownLimit)
	got, err := os.ReadFile(summary)
	require.NoError(t, err)
	// The step summary is the same document with the GREEN rows collapsed
	// to a count, once.
	assert.Equal(t, 1, strings.Count(string(got), "\n### ❌ board guards — exit 1\n"), string(got))
	assert.Contains(t, string(got), "section(s) | collapsed: the JSON and HTML reports list them |")
	assert.NotContains(t, string(got), "| GREEN |  | ", "no GREEN row of its own")
	assert.Contains(t, string(md), "| GREEN |  | ", "--md keeps the GREEN rows")

	// JSON stays one file per board, which is what merge reads back.
	for _, name := range []string{"guards", "bug-repro"} {
		b := readBoard(t, filepath.Join(reports, "board."+name+".json"))
		assert.Equal(t, name, b.Name)
		assert.Equal(t, board.Schema, b.Schema)
	}
	for _, p := range []string{"board.json", "board.guards.html", "board.guards.md", "board.bug-repro.html", "board.bug-repro.md"} {
		assert.NoFileExists(t, filepath.Join(reports, p))
	}

	// A page next to the artefacts shows and links them by relative paths,
	// and still embeds the chart.
	code, _, stderr = invoke(t, append([]string{"merge", "--no-history", "--out", dir, "--html", filepath.Join(dir, "page.html")}, files...)...)
	assert.Equal(t, 1, code, stderr)
	page, err = os.ReadFile(filepath.Join(dir, "page.html"))
	require.NoError(t, err)
	parseXML(t, page)
	assert.Contains(t, string(page), `<a href="artifacts/merge/bug-repro/charts/issue581.svg"><code>artifacts/merge/bug-repro/charts/issue581.svg</code></a>`)
	assert.NotContains(t, string(page), dir)
	assert.Equal(t, 1, strings.Count(string(page), `src="data:image/svg&#43;xml;base64,`))

	// One board keeps the one-board page and document.
	code, _, stderr = invoke(t, "merge", "--no-history", "--out", reports, "--html", htmlPath, "--md", mdPath, files[1])
	assert.Equal(t, 0, code, stderr)
	page, err = os.ReadFile(htmlPath)
	require.NoError(t, err)
	parseXML(t, page)
	assert.Contains(t, string(page), `<h1>board bug-repro: <span class="exit0">exit 0</span></h1>`)
	assert.NotContains(t, string(page), "overview")
	md, err = os.ReadFile(mdPath)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(md), "## ✅ board bug-repro — exit 0\n"), string(md))
}

// TestMarkdownOfTwoBoardsWithHugeExcerptsStaysUnderTheLimit: the 1 MiB
// step summary limit holds for both boards together, not for each.
func TestMarkdownOfTwoBoardsWithHugeExcerptsStaysUnderTheLimit(t *testing.T) {
	huge := strings.Repeat("output that goes on and on, | and <b>tags</b>\n", 1<<20/47+1)
	_, files := fixtureReports(t, func(b *board.Board) {
		for i := range b.Sections {
			if b.Sections[i].Outcome != outcome.Green {
				b.Sections[i].Excerpt = huge
			}
		}
	})
	reports := t.TempDir()
	summary := filepath.Join(reports, "summary.md")
	require.NoError(t, os.WriteFile(summary, []byte("# an earlier step's summary\n"), 0o644))
	t.Setenv("GITHUB_STEP_SUMMARY", summary)
	mdPath := filepath.Join(reports, "board.md")
	code, _, stderr := invoke(t, append([]string{"merge", "--no-history", "--out", t.TempDir(), "--md", mdPath}, files...)...)
	assert.Equal(t, 1, code, stderr)
	md, err := os.ReadFile(mdPath)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(md), report.MarkdownLimit)
	assert.Greater(t, len(md), report.MarkdownLimit*3/4, "the budget is used")
	assert.Contains(t, string(md), "\n### ❌ board guards — exit 1\n")
	assert.Contains(t, string(md), "\n### ✅ board bug-repro — exit 0\n")
	assert.Equal(t, 7, strings.Count(string(md), "<details>"), "every excerpt of both boards (2 and 5), cut to fit")

	got, err := os.ReadFile(summary)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(got), report.MarkdownLimit, "what was there and the boards' document together")
	assert.True(t, strings.HasPrefix(string(got), "# an earlier step's summary\n## ❌ reproboard — exit 1"))
	assert.Equal(t, 1, strings.Count(string(got), "## ❌ reproboard"), "once")
}
