package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/excerpt"
	"github.com/reproboard/reproboard/harness/outcome"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fixtureBoard(t *testing.T, opts board.Options) *board.Board {
	t.Helper()
	if opts.Board == "" {
		opts = board.Options{Board: "bug-repro", Target: "demod", Gating: false, Platform: "linux/amd64"}
	}
	return board.Classify(collectFile(t, "board.jsonl"), fixtureKnown(t), opts)
}

func TestJSONRoundTrip(t *testing.T) {
	b := fixtureBoard(t, board.Options{})
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, b))

	back, err := ReadJSON(bytes.NewReader(buf.Bytes()), "board.json")
	require.NoError(t, err)
	assert.Equal(t, b, back)

	// The schema's field names are a contract: pin them.
	var raw map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &raw))
	for _, k := range []string{"schema", "board", "target", "gating", "strict", "platform", "exit_code", "exit_reason", "sections", "counts"} {
		assert.Contains(t, raw, k)
	}
	assert.Equal(t, "reproboard.board/v1", raw["schema"])
	sec := raw["sections"].([]any)[0].(map[string]any)
	for _, k := range []string{"package", "test", "outcome", "issue", "reason", "duration_s", "excerpt", "artifacts", "measure"} {
		assert.Contains(t, sec, k)
	}
}

func TestReadJSONRejectsOtherSchemas(t *testing.T) {
	_, err := ReadJSON(strings.NewReader(`{"schema":"reproboard.board/v0"}`), "old.json")
	require.Error(t, err)
	assert.Equal(t, `old.json: schema "reproboard.board/v0", want "reproboard.board/v1"; it was written by another reproboard version, rerun the board with this one`, err.Error())
	_, err = ReadJSON(strings.NewReader(`not json`), "x.json")
	assert.ErrorContains(t, err, "x.json: not a board JSON report")
}

// shardStream rewrites an unsharded run into what shard k of n would have
// produced: sections of other shards skip at once with the harness's shard
// message, and parents and packages fail only if one of their sections did.
func shardStream(t *testing.T, data []byte, k, n int) []byte {
	t.Helper()
	res, err := board.Collect(bytes.NewReader(data))
	require.NoError(t, err)
	leaf := map[testKey]bool{}
	for _, s := range res.Sections {
		leaf[testKey{s.Package, s.Test}] = true
	}
	var events []board.Event
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		e, err := board.ParseEvent(line)
		require.NoError(t, err)
		events = append(events, e)
	}
	failed := map[testKey]bool{} // tests and packages ({pkg, ""}) that fail in this shard
	for _, e := range events {
		k0 := testKey{e.Package, e.Test}
		if leaf[k0] && e.Action == "fail" && outcome.InShard(e.Test, k, n) {
			failed[testKey{e.Package, ""}] = true
			for anc := e.Test; strings.Contains(anc, "/"); {
				anc = anc[:strings.LastIndex(anc, "/")]
				failed[testKey{e.Package, anc}] = true
			}
		}
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	for _, e := range events {
		key := testKey{e.Package, e.Test}
		switch {
		case leaf[key] && !outcome.InShard(e.Test, k, n):
			switch e.Action {
			case "run":
				require.NoError(t, enc.Encode(e))
				msg := fmt.Sprintf("    section.go:1: reproboard shard %d/%d: section belongs to another shard\n", k, n)
				require.NoError(t, enc.Encode(board.Event{Time: e.Time, Action: "output", Package: e.Package, Test: e.Test, Output: msg}))
			case "pass", "fail", "skip":
				require.NoError(t, enc.Encode(board.Event{Time: e.Time, Action: "skip", Package: e.Package, Test: e.Test}))
			}
		case !leaf[key] && (e.Action == "pass" || e.Action == "fail"):
			e.Action = "pass"
			if failed[key] {
				e.Action = "fail"
			}
			require.NoError(t, enc.Encode(e))
		default:
			require.NoError(t, enc.Encode(e))
		}
	}
	return out.Bytes()
}

func TestMergeOfShardsEqualsTheUnshardedBoard(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(fixtures, "events", "board.jsonl"))
	require.NoError(t, err)
	known := fixtureKnown(t)
	for _, gating := range []bool{true, false} {
		opts := board.Options{Board: "b", Target: "demod", Gating: gating, Platform: "linux/amd64"}
		whole := board.Classify(collectFile(t, "board.jsonl"), known, opts)

		var parts []*board.Board
		for k := 1; k <= 2; k++ {
			res, err := board.Collect(bytes.NewReader(shardStream(t, data, k, 2)))
			require.NoError(t, err)
			o := opts
			o.Shard = fmt.Sprintf("%d/2", k)
			o.Run = &board.RunKey{Config: "sha256:c", Listing: "sha256:l"}
			shard := board.Classify(res, known, o)
			require.NotEmpty(t, shard.Sections, "shard %d/2 of the fixture is empty: the test proves nothing", k)
			require.Less(t, len(shard.Sections), len(whole.Sections))
			var buf bytes.Buffer
			require.NoError(t, WriteJSON(&buf, shard))
			back, err := ReadJSON(&buf, o.Shard)
			require.NoError(t, err)
			parts = append(parts, back)
		}
		merged, err := board.Merge(parts, []string{"shard1.json", "shard2.json"}, board.MergeOptions{})
		require.NoError(t, err)
		assert.Equal(t, whole.Sections, merged.Sections)
		assert.Equal(t, whole.Skipped, merged.Skipped)
		assert.Equal(t, whole.Counts, merged.Counts)
		assert.Equal(t, whole.ExitCode, merged.ExitCode)
		assert.Equal(t, whole.ExitReason, merged.ExitReason)
		assert.Empty(t, merged.Problems)
	}
}

func TestMergeRefusesOverlapAndMixedBoards(t *testing.T) {
	key := &board.RunKey{Config: "sha256:c", Listing: "sha256:l"}
	a := fixtureBoard(t, board.Options{Board: "bug-repro", Target: "demod", Platform: "linux/amd64", Shard: "1/2", Run: key})
	a2 := *a
	a2.Shard = "2/2"
	_, err := board.Merge([]*board.Board{a, &a2}, []string{"a.json", "b.json"}, board.MergeOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is in both a.json and b.json: the shards overlap")

	other := *a
	other.Name = "guards"
	other.Shard = "2/2"
	_, err = board.Merge([]*board.Board{a, &other}, []string{"a.json", "g.json"}, board.MergeOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `merge the shards of one board at a time`)
}

func TestTerminalReport(t *testing.T) {
	b := fixtureBoard(t, board.Options{})
	var buf bytes.Buffer
	require.NoError(t, WriteTerminal(&buf, b, TerminalOptions{}))
	out := buf.String()
	assert.NotContains(t, out, "\x1b[", "no colour unless asked")
	assert.Regexp(t, `(?m)^KNOWN-RED\s+#581\s+12\.0s\s+TestRepro/issue581 \(repro\)\s+query-path memory`, out)
	assert.Regexp(t, `(?m)^GREEN\s+1\.5s\s+TestRepro/control \(repro\)\s*$`, out)
	assert.Regexp(t, `--- RED TestRepro/issue600 \(repro\): known-red #600 but the failure\s+signature\s+changed:\s+someone must look\n`, out)
	assert.Contains(t, out, "artifact chart: charts/issue581.svg\n")
	assert.Contains(t, out, "measure: LEAK_MEASURE op=query")
	assert.Contains(t, out, "1 section(s) skipped, not counted:\n  TestRepro/darwin_only: needs darwin")
	assert.True(t, strings.HasSuffix(strings.Join(strings.Fields(out), " "), "bug-repro: 9 section(s): 2 RED, 2 INCONCLUSIVE, 1 SETUP-FAIL, 1 FIXED, 1 KNOWN-RED, 2 GREEN — exit 2: setup failure, nothing regressed but not everything was verified: 1 SETUP-FAIL"), out)

	buf.Reset()
	require.NoError(t, WriteTerminal(&buf, b, TerminalOptions{Color: true}))
	assert.Contains(t, buf.String(), "\x1b[31mRED\x1b[0m           #600", "padded after the colour, so the columns align")
}

func TestExcerptsAreTailsThatNeverSplitARune(t *testing.T) {
	out := "first line\n" + strings.Repeat("é", 3000) + "\nthe cause\n"
	s := board.ClassifySection(board.SectionResult{Package: "p", Test: "TestX", Action: "fail", Output: out}, nil, "linux/amd64")
	require.True(t, utf8.ValidString(s.Excerpt))
	elided, body := excerpt.SplitElided(s.Excerpt)
	assert.LessOrEqual(t, len(body), 1500)
	assert.Equal(t, int64(len(out)-len(body)), elided)
	assert.True(t, strings.HasSuffix(s.Excerpt, "the cause\n"))
	assert.True(t, strings.HasPrefix(s.Excerpt, fmt.Sprintf("...(%d chars elided)...\n", elided)))

	// An output already cut by the collector keeps counting what it lost.
	s = board.ClassifySection(board.SectionResult{Test: "TestY", Action: "fail", Output: "...(100000 chars elided)...\n" + strings.Repeat("x", 2000)}, nil, "")
	elided, _ = excerpt.SplitElided(s.Excerpt)
	assert.Equal(t, int64(100500), elided)
}

func TestMarkdownReport(t *testing.T) {
	b := fixtureBoard(t, board.Options{})
	var buf bytes.Buffer
	require.NoError(t, WriteMarkdown(&buf, b, MarkdownOptions{}))
	md := buf.String()
	assert.Contains(t, md, "## ⚠️ board bug-repro — exit 2\n")
	assert.Contains(t, md, "| **KNOWN-RED** | #581 | 12.0s | `TestRepro/issue581 (repro)` | query-path memory growth: unbounded per-session result cache |\n")
	assert.Contains(t, md, "<details><summary>RED TestRepro/issue600 (repro): known-red #600 but the failure signature changed: someone must look</summary>")
	assert.Contains(t, md, "```text\n")
	assert.Equal(t, 7, strings.Count(md, "<details>"), "one per non-GREEN section")
}

func TestMarkdownStaysUnderOneMiB(t *testing.T) {
	b := &board.Board{Schema: board.Schema, Name: "huge", Target: "demod", Gating: true, Platform: "linux/amd64"}
	huge := strings.Repeat("a line of output with | pipes and <tags> and ``` fences\n", 1<<20/56+1) // 1 MiB
	require.GreaterOrEqual(t, len(huge), 1<<20)
	for i := range 50 {
		b.Sections = append(b.Sections, board.Section{
			Package: "example.com/p", Test: fmt.Sprintf("TestHuge/%02d", i), Outcome: outcome.Red,
			Reason: strings.Repeat("why ", 1000), Excerpt: huge, Artifacts: map[string]string{},
		})
	}
	b.Score()
	var buf bytes.Buffer
	require.NoError(t, WriteMarkdown(&buf, b, MarkdownOptions{}))
	md := buf.String()
	assert.Less(t, len(md), 1<<20)
	assert.Greater(t, len(md), 1<<19, "the budget is used, not thrown away")
	assert.Equal(t, 50, strings.Count(md, "<details>"))
	assert.Contains(t, md, "`TestHuge/49`")
	assert.True(t, utf8.ValidString(md))
}

const chartSVG = `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="100" height="50"><polyline points="0,50 50,25 100,0" fill="none" stroke="red"/></svg>
`

func TestHTMLReportIsSelfContainedWithInlineCharts(t *testing.T) {
	b := fixtureBoard(t, board.Options{})
	for i := range b.Sections {
		switch b.Sections[i].Test {
		case "TestRepro/issue600":
			b.Sections[i].Excerpt = "</pre><script>alert('x')</script> & more"
		case "TestRepro/control":
			b.Sections[i].Artifacts["chart"] = "charts/not-svg.svg"
		case "TestRepro/issue700": // one chart per measured metric
			b.Sections[i].Artifacts["uss.chart"] = "charts/uss.svg"
			b.Sections[i].Artifacts["file-wal.chart"] = "charts/wal.svg"
			b.Sections[i].Artifacts["uss.samples"] = "charts/uss.csv"
		}
	}
	files := map[string]string{
		"charts/issue581.svg": chartSVG,
		"charts/not-svg.svg":  `<html><body>not a chart</body></html>`,
		"charts/uss.svg":      strings.Replace(chartSVG, "red", "blue", 1),
		"charts/wal.svg":      strings.Replace(chartSVG, "red", "green", 1),
		"charts/uss.csv":      "n,uss\n",
	}
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, errors.New("no such file")
	}
	var buf bytes.Buffer
	require.NoError(t, WriteHTML(&buf, b, HTMLOptions{ReadFile: read}))
	page := buf.String()

	// Well-formed: the page parses as strict XML (XHTML-compatible HTML),
	// with no script element and nothing fetched from elsewhere.
	d := xml.NewDecoder(strings.NewReader(page))
	var elements, imgs []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "the HTML report is not well-formed")
		if se, ok := tok.(xml.StartElement); ok {
			elements = append(elements, se.Name.Local)
			for _, a := range se.Attr {
				if se.Name.Local == "img" && a.Name.Local == "src" {
					imgs = append(imgs, a.Value)
				}
			}
			assert.NotEqual(t, "script", se.Name.Local)
			assert.NotEqual(t, "link", se.Name.Local)
			for _, a := range se.Attr {
				if a.Name.Local == "src" || a.Name.Local == "href" {
					assert.False(t, strings.Contains(a.Value, "//"), "external reference %s=%q", a.Name.Local, a.Value)
				}
			}
		}
	}
	assert.Equal(t, "html", elements[0])
	assert.Contains(t, elements, "table")

	dataURL := func(p string) string {
		return "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte(files[p]))
	}
	assert.Equal(t, []string{dataURL("charts/issue581.svg"), dataURL("charts/wal.svg"), dataURL("charts/uss.svg")}, imgs,
		"every valid SVG chart is embedded inline, the invalid one and the samples are not")
	assert.Contains(t, page, "chart charts/not-svg.svg not shown: root element &lt;html&gt;, want &lt;svg&gt;")
	assert.Contains(t, page, "&lt;/pre&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; more")
	assert.Contains(t, page, "<title>reproboard: board bug-repro (exit 2)</title>")
}

func TestRelativePathsTravelWithTheReport(t *testing.T) {
	dir := t.TempDir()
	b := &board.Board{Schema: board.Schema, Events: filepath.Join(dir, "guards.events.jsonl"), Sections: []board.Section{{
		Test: "TestA", Outcome: outcome.Red,
		Artifacts: map[string]string{"chart": filepath.Join(dir, "artifacts", "a.svg"), "elsewhere": "/var/x.json"},
	}}}
	rel := b.RelativeTo(dir)
	assert.Equal(t, "guards.events.jsonl", rel.Events)
	assert.Equal(t, filepath.Join("artifacts", "a.svg"), rel.Sections[0].Artifacts["chart"])
	assert.Equal(t, "/var/x.json", rel.Sections[0].Artifacts["elsewhere"])
	assert.Equal(t, filepath.Join(dir, "artifacts", "a.svg"), b.Sections[0].Artifacts["chart"], "the original is not changed")

	moved := t.TempDir() // the CI artefact downloaded elsewhere
	rel.Resolve(moved)
	assert.Equal(t, filepath.Join(moved, "guards.events.jsonl"), rel.Events)
	assert.Equal(t, filepath.Join(moved, "artifacts", "a.svg"), rel.Sections[0].Artifacts["chart"])
}

// twoBoards classifies the fixture run as the two boards of
// testdata/board.yaml: the guards package on a gating board (exit 1: an
// INCONCLUSIVE section), the repro package on a non-gating one (exit 0).
func twoBoards(t *testing.T) []*board.Board {
	t.Helper()
	res := collectFile(t, "board.jsonl")
	of := func(pkg string) *board.Results {
		out := &board.Results{Sections: []board.SectionResult{}}
		for _, s := range res.Sections {
			if s.Package == pkg {
				out.Sections = append(out.Sections, s)
			}
		}
		return out
	}
	known := fixtureKnown(t)
	guards := board.Classify(of("example.com/app/guards"), known, board.Options{Board: "guards", Target: "demod", Gating: true, Platform: "linux/amd64"})
	repro := board.Classify(of("example.com/app/repro"), known, board.Options{Board: "bug-repro", Target: "demod", Platform: "linux/amd64"})
	require.Equal(t, 1, guards.ExitCode)
	require.Equal(t, 0, repro.ExitCode)
	return []*board.Board{guards, repro}
}

// xhtml parses page as strict XML, failing t unless it is well-formed,
// self-contained and inert, and returns its elements, img sources and ids
// in order.
func xhtml(t *testing.T, page string) (elements, imgs, ids []string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(page))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return elements, imgs, ids
		}
		require.NoError(t, err, "the HTML report is not well-formed")
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		elements = append(elements, se.Name.Local)
		assert.NotEqual(t, "script", se.Name.Local)
		assert.NotEqual(t, "link", se.Name.Local)
		for _, a := range se.Attr {
			switch a.Name.Local {
			case "src", "href":
				assert.False(t, strings.Contains(a.Value, "//"), "external reference %s=%q", a.Name.Local, a.Value)
				if se.Name.Local == "img" {
					imgs = append(imgs, a.Value)
				}
			case "id":
				ids = append(ids, a.Value)
			}
		}
	}
}

func TestHTMLReportOfSeveralBoardsIsOnePage(t *testing.T) {
	boards := twoBoards(t)
	read := func(p string) ([]byte, error) {
		if p == "charts/issue581.svg" {
			return []byte(chartSVG), nil
		}
		return nil, errors.New("no such file")
	}
	var buf bytes.Buffer
	require.NoError(t, WriteHTMLBoards(&buf, boards, HTMLOptions{ReadFile: read}))
	page := buf.String()
	elements, imgs, ids := xhtml(t, page)
	assert.Equal(t, "html", elements[0])

	assert.Contains(t, page, "<title>reproboard: boards guards, bug-repro (exit 1)</title>")
	assert.Contains(t, page, `<h1>reproboard: 2 boards, <span class="exit1">exit 1</span> (regression)</h1>`)
	assert.Contains(t, page, `<p class="verdict">regression on board guards</p>`)
	// The overview: one row per board with its exit code and counts.
	assert.Regexp(t, `<tr><td class="nowrap"><a href="#b1">guards</a></td><td class="nowrap">gating</td><td class="nowrap exit1">exit 1</td><td class="nowrap">3: <span class="chip INCONCLUSIVE">1 INCONCLUSIVE</span>`, page)
	assert.Regexp(t, `<tr><td class="nowrap"><a href="#b2">bug-repro</a></td><td class="nowrap">non-gating</td><td class="nowrap exit0">exit 0</td><td class="nowrap">6: `, page)
	// Each board's section, in order, with its facts, table and details.
	g := strings.Index(page, `<h2>board guards: <span class="exit1">exit 1</span> (regression)</h2>`)
	r := strings.Index(page, `<h2>board bug-repro: <span class="exit0">exit 0</span> (green)</h2>`)
	require.Positive(t, g)
	require.Greater(t, r, g, "boards in the given order")
	assert.Contains(t, page[g:r], "gating board, target <code>demod</code>, linux/amd64. 3 section(s): 1 INCONCLUSIVE, 1 SETUP-FAIL, 1 GREEN.")
	assert.Contains(t, page[g:r], "metric unreadable: /proc/4242/smaps_rollup: permission denied")
	assert.NotContains(t, page[g:r], "TestRepro/")
	assert.Contains(t, page[r:], "non-gating board, target <code>demod</code>")
	assert.Contains(t, page[r:], "<h3>Skipped, not counted</h3>")
	assert.Contains(t, page[r:], `<h3><span class="chip KNOWN-RED">KNOWN-RED</span> TestRepro/issue581</h3>`)
	assert.Equal(t, 2, strings.Count(page, `<table class="sections">`))

	// The leak chart is embedded inline, in the repro board's section.
	want := "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte(chartSVG))
	assert.Equal(t, []string{want}, imgs)
	assert.Greater(t, strings.Index(page, `src="data:image/svg&#43;xml;base64,`), r)

	// Anchors are unique on the page, and every link has its target.
	seen := map[string]bool{}
	for _, id := range ids {
		assert.False(t, seen[id], "duplicate id %q", id)
		seen[id] = true
	}
	for _, m := range regexp.MustCompile(`href="#([^"]+)"`).FindAllStringSubmatch(page, -1) {
		assert.True(t, seen[m[1]], "link to #%s has no target", m[1])
	}
	assert.Contains(t, ids, "b1")
	assert.Contains(t, ids, "b2-s2")
}

func TestHTMLReportOfOneBoardKeepsItsLayout(t *testing.T) {
	b := twoBoards(t)[1]
	var one, single bytes.Buffer
	require.NoError(t, WriteHTMLBoards(&one, []*board.Board{b}, HTMLOptions{ReadFile: os.ReadFile}))
	require.NoError(t, WriteHTML(&single, b, HTMLOptions{ReadFile: os.ReadFile}))
	assert.Equal(t, single.String(), one.String())
	page := one.String()
	xhtml(t, page)
	assert.Contains(t, page, `<h1>board bug-repro: <span class="exit0">exit 0</span></h1>`)
	assert.NotContains(t, page, "overview", "no overall header for one board")
	assert.Contains(t, page, `<h2><span class="chip KNOWN-RED">KNOWN-RED</span> TestRepro/issue581</h2>`)
}

func TestMarkdownOfSeveralBoards(t *testing.T) {
	boards := twoBoards(t)
	var buf bytes.Buffer
	require.NoError(t, WriteMarkdownBoards(&buf, boards, MarkdownOptions{}))
	md := buf.String()
	assert.True(t, strings.HasPrefix(md, "## ❌ reproboard — exit 1 (regression)\n\nregression on board guards.\n\n| board | kind | exit | sections | why |\n"), md)
	assert.Contains(t, md, "| ❌ guards | gating | 1 | 3 section(s): 1 INCONCLUSIVE, 1 SETUP-FAIL, 1 GREEN | regression: 1 INCONCLUSIVE |\n")
	assert.Contains(t, md, "| ✅ bug-repro | non-gating | 0 | 6 section(s): ")
	g := strings.Index(md, "\n### ❌ board guards — exit 1\n")
	r := strings.Index(md, "\n### ✅ board bug-repro — exit 0\n")
	require.Positive(t, g)
	require.Greater(t, r, g)
	assert.Contains(t, md[g:r], "| **INCONCLUSIVE** |  | 1.0s | `TestGuards/query/rss` |")
	assert.Contains(t, md[g:r], "<details><summary>INCONCLUSIVE TestGuards/query/rss: metric unreadable")
	assert.Contains(t, md[r:], "<details><summary>KNOWN-RED TestRepro/issue581: query-path memory growth")
	assert.Equal(t, 7, strings.Count(md, "<details>"), "one per non-GREEN section of either board")
	assert.Equal(t, 1, strings.Count(md, "_Excerpts are output tails"), "one footer for the document")
}

func TestMarkdownOfSeveralBoardsStaysUnderOneMiBInAll(t *testing.T) {
	huge := strings.Repeat("a line of output with | pipes and <tags> and ``` fences\n", 1<<20/56+1) // 1 MiB
	hugeBoard := func(name string, n int) *board.Board {
		b := &board.Board{Schema: board.Schema, Name: name, Target: "demod", Gating: true, Platform: "linux/amd64"}
		for i := range n {
			b.Sections = append(b.Sections, board.Section{
				Package: "example.com/p", Test: fmt.Sprintf("TestHuge/%s-%02d", name, i), Outcome: outcome.Red,
				Reason: strings.Repeat("why ", 1000), Excerpt: huge, Artifacts: map[string]string{},
			})
		}
		b.Score()
		return b
	}
	small := &board.Board{Schema: board.Schema, Name: "small", Target: "demod", Platform: "linux/amd64", Sections: []board.Section{{
		Package: "example.com/p", Test: "TestSmall", Outcome: outcome.Red, Excerpt: "a short excerpt, shown whole\n", Artifacts: map[string]string{},
	}}}
	small.Score()
	boards := []*board.Board{hugeBoard("first", 40), small, hugeBoard("second", 25)}

	for _, limit := range []int{0, 256 << 10} {
		var buf bytes.Buffer
		require.NoError(t, WriteMarkdownBoards(&buf, boards, MarkdownOptions{Limit: limit}))
		md := buf.String()
		want := limit
		if want == 0 {
			want = MarkdownLimit
		}
		assert.LessOrEqual(t, len(md), want, "limit %d", limit)
		assert.Greater(t, len(md), want*3/4, "the budget is used, not thrown away (limit %d)", limit)
		assert.True(t, utf8.ValidString(md))
		assert.True(t, strings.HasPrefix(md, "## ❌ reproboard — exit 1 (regression)\n"))
		for _, h := range []string{"### ❌ board first — exit 1", "### ✅ board small — exit 0", "### ❌ board second — exit 1"} {
			assert.Contains(t, md, "\n"+h+"\n")
		}
		assert.Equal(t, 66, strings.Count(md, "<details>"), "every excerpt of every board, cut")
		assert.Contains(t, md, "`TestHuge/first-39`")
		assert.Contains(t, md, "`TestHuge/second-24`")
		assert.Contains(t, md, "```text\na short excerpt, shown whole\n```", "a small excerpt is not cut for the big ones")

		// The big excerpts are cut to equal shares, across boards.
		var sizes []int
		for _, part := range strings.Split(md, "<details>")[1:] {
			if strings.HasPrefix(part, "<summary>RED TestHuge/") {
				sizes = append(sizes, strings.Index(part, "</details>"))
			}
		}
		require.Len(t, sizes, 65)
		assert.InDelta(t, sizes[0], sizes[64], 64, "first board's and second board's shares")
	}
}

func TestShareOut(t *testing.T) {
	assert.Equal(t, []int{10, 45, 45}, shareOut([]int{10, 100, 1000}, 100))
	assert.Equal(t, []int{10, 20}, shareOut([]int{10, 20}, 100), "needs below the total are met")
	assert.Equal(t, []int{0, 0}, shareOut([]int{10, 20}, -5))
	assert.Empty(t, shareOut(nil, 100))
}

func TestOverall(t *testing.T) {
	boards := twoBoards(t)
	code, reason := board.Overall(boards)
	assert.Equal(t, 1, code)
	assert.Equal(t, "regression on board guards", reason)

	setup := *boards[0]
	setup.Name, setup.ExitCode = "broken", 2
	code, reason = board.Overall([]*board.Board{boards[1], &setup})
	assert.Equal(t, 2, code)
	assert.Equal(t, "setup failure on board broken: nothing regressed, but not everything was verified", reason)

	code, reason = board.Overall(boards[1:])
	assert.Equal(t, 0, code)
	assert.Equal(t, "ok: nothing regressed on any board; known-red sections now pass on board bug-repro: FIXED, promote them", reason)

	assert.Equal(t, 1, board.CombineExit([]int{2, 1, 0}))
	assert.Equal(t, 2, board.CombineExit([]int{0, 2}))
	assert.Equal(t, 0, board.CombineExit(nil))
}
