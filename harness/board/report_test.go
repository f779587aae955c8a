package board

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
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/reproboard/reproboard/harness/outcome"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fixtureBoard(t *testing.T, opts Options) *Board {
	t.Helper()
	if opts.Board == "" {
		opts = Options{Board: "bug-repro", Target: "demod", Gating: false, Platform: "linux/amd64"}
	}
	return Classify(collectFile(t, "board.jsonl"), fixtureKnown(t), opts)
}

func TestJSONRoundTrip(t *testing.T) {
	b := fixtureBoard(t, Options{})
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
	res, err := Collect(bytes.NewReader(data))
	require.NoError(t, err)
	leaf := map[testKey]bool{}
	for _, s := range res.Sections {
		leaf[testKey{s.Package, s.Test}] = true
	}
	var events []Event
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		e, err := ParseEvent(line)
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
				require.NoError(t, enc.Encode(Event{Time: e.Time, Action: "output", Package: e.Package, Test: e.Test, Output: msg}))
			case "pass", "fail", "skip":
				require.NoError(t, enc.Encode(Event{Time: e.Time, Action: "skip", Package: e.Package, Test: e.Test}))
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
	data, err := os.ReadFile("testdata/events/board.jsonl")
	require.NoError(t, err)
	known := fixtureKnown(t)
	for _, gating := range []bool{true, false} {
		opts := Options{Board: "b", Target: "demod", Gating: gating, Platform: "linux/amd64"}
		whole := Classify(collectFile(t, "board.jsonl"), known, opts)

		var parts []*Board
		for k := 1; k <= 2; k++ {
			res, err := Collect(bytes.NewReader(shardStream(t, data, k, 2)))
			require.NoError(t, err)
			o := opts
			o.Shard = fmt.Sprintf("%d/2", k)
			shard := Classify(res, known, o)
			require.NotEmpty(t, shard.Sections, "shard %d/2 of the fixture is empty: the test proves nothing", k)
			require.Less(t, len(shard.Sections), len(whole.Sections))
			var buf bytes.Buffer
			require.NoError(t, WriteJSON(&buf, shard))
			back, err := ReadJSON(&buf, o.Shard)
			require.NoError(t, err)
			parts = append(parts, back)
		}
		merged, err := Merge(parts, []string{"shard1.json", "shard2.json"})
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
	a := fixtureBoard(t, Options{})
	_, err := Merge([]*Board{a, a}, []string{"a.json", "b.json"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is in both a.json and b.json: the shards overlap")

	other := *a
	other.Name = "guards"
	_, err = Merge([]*Board{a, &other}, []string{"a.json", "g.json"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `merge the shards of one board at a time`)
}

func TestTerminalReport(t *testing.T) {
	b := fixtureBoard(t, Options{})
	var buf bytes.Buffer
	require.NoError(t, WriteTerminal(&buf, b, TerminalOptions{}))
	out := buf.String()
	assert.NotContains(t, out, "\x1b[", "no colour unless asked")
	assert.Regexp(t, `(?m)^KNOWN-RED\s+#581\s+12\.0s\s+TestRepro/issue581 \(repro\)\s+query-path memory growth`, out)
	assert.Regexp(t, `(?m)^GREEN\s+1\.5s\s+TestRepro/control \(repro\)\s*$`, out)
	assert.Contains(t, out, "--- RED TestRepro/issue600 (repro): known-red #600 but the failure signature changed: someone must look\n")
	assert.Contains(t, out, "artifact chart: charts/issue581.svg\n")
	assert.Contains(t, out, "measure: LEAK_MEASURE op=query")
	assert.Contains(t, out, "1 section(s) skipped, not counted:\n  TestRepro/darwin_only: needs darwin")
	assert.True(t, strings.HasSuffix(out, "bug-repro: 9 section(s): 2 RED, 2 INCONCLUSIVE, 1 SETUP-FAIL, 1 FIXED, 1 KNOWN-RED, 2 GREEN — exit 2: setup failure, nothing regressed but not everything was verified: 1 SETUP-FAIL\n"), out)

	buf.Reset()
	require.NoError(t, WriteTerminal(&buf, b, TerminalOptions{Color: true}))
	assert.Contains(t, buf.String(), "\x1b[31mRED         \x1b[0m")
}

func TestExcerptsAreTailsThatNeverSplitARune(t *testing.T) {
	out := "first line\n" + strings.Repeat("é", 3000) + "\nthe cause\n"
	s := ClassifySection(SectionResult{Package: "p", Test: "TestX", Action: "fail", Output: out}, nil, "linux/amd64")
	require.True(t, utf8.ValidString(s.Excerpt))
	elided, body := splitElided(s.Excerpt)
	assert.LessOrEqual(t, len(body), 1500)
	assert.Equal(t, int64(len(out)-len(body)), elided)
	assert.True(t, strings.HasSuffix(s.Excerpt, "the cause\n"))
	assert.True(t, strings.HasPrefix(s.Excerpt, fmt.Sprintf("...(%d chars elided)...\n", elided)))

	// An output already cut by the collector keeps counting what it lost.
	s = ClassifySection(SectionResult{Test: "TestY", Action: "fail", Output: "...(100000 chars elided)...\n" + strings.Repeat("x", 2000)}, nil, "")
	elided, _ = splitElided(s.Excerpt)
	assert.Equal(t, int64(100500), elided)
}

func TestMarkdownReport(t *testing.T) {
	b := fixtureBoard(t, Options{})
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
	b := &Board{Schema: Schema, Name: "huge", Target: "demod", Gating: true, Platform: "linux/amd64"}
	huge := strings.Repeat("a line of output with | pipes and <tags> and ``` fences\n", 1<<20/56+1) // 1 MiB
	require.GreaterOrEqual(t, len(huge), 1<<20)
	for i := range 50 {
		b.Sections = append(b.Sections, Section{
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
	b := fixtureBoard(t, Options{})
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

func TestWriteJUnitEventsDropsOtherShardsSections(t *testing.T) {
	data, err := os.ReadFile("testdata/events/board.jsonl")
	require.NoError(t, err)
	s1, s2 := shardStream(t, data, 1, 2), shardStream(t, data, 2, 2)
	var buf bytes.Buffer
	require.NoError(t, WriteJUnitEvents(&buf, bytes.NewReader(s1), bytes.NewReader(s2)))
	assert.NotContains(t, buf.String(), "reproboard shard")

	ends := map[string][]string{} // test -> its terminal actions
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		e, err := ParseEvent(line)
		require.NoError(t, err)
		if e.Test != "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
			ends[e.Test] = append(ends[e.Test], e.Action)
		}
	}
	for _, s := range collectFile(t, "board.jsonl").Sections {
		assert.Equal(t, []string{s.Action}, ends[s.Test], "%s: once, with its real result", s.Test)
	}
}

func TestRelativePathsTravelWithTheReport(t *testing.T) {
	dir := t.TempDir()
	b := &Board{Schema: Schema, Events: filepath.Join(dir, "guards.events.jsonl"), Sections: []Section{{
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
