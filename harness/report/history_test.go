package report

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/history"
	"github.com/reproboard/reproboard/harness/outcome"
)

// historyPageLimit is the most the HTML page of a board of 30 sections,
// each with a leak measure, with 100 runs of history may weigh.
const historyPageLimit = 1 << 20

// boardWithHistory is a board of sections sections, each with a leak
// measure, and runs runs of its history (the board the last of them); a
// section flips every third run.
func boardWithHistory(sections, runs int) (*board.Board, *history.Analysis) {
	var hist []*history.Run
	for i := range runs {
		r := &history.Run{ID: int64(i + 1), Board: "guards", Time: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour),
			Commit: fmt.Sprintf("%07x%033d", i+1, 0)}
		r.CommitURL = "https://github.com/o/r/commit/" + r.Commit
		for j := range sections {
			o := outcome.Green
			if j == 0 && i%3 == 2 {
				o = outcome.Red
			}
			slope, sens := float64(1000+10*i+j), 150.0
			r.Sections = append(r.Sections, history.Section{Package: "example.com/g", Test: fmt.Sprintf("TestGuard/s%02d", j), Outcome: o, Duration: 1.25, Attempts: 1,
				Measures: []history.Measure{{Metric: "uss", Unit: "bytes", Slope: &slope, Budget: "4KiB/op", Sensitivity: &sens, Verdict: outcome.Green}}})
		}
		hist = append(hist, r)
	}
	last := hist[len(hist)-1]
	b := &board.Board{Schema: board.Schema, Name: "guards", Target: "demod", Gating: true, Platform: "linux/amd64"}
	for _, s := range last.Sections {
		b.Sections = append(b.Sections, board.Section{Package: s.Package, Test: s.Test, Outcome: s.Outcome, Duration: s.Duration, Artifacts: map[string]string{},
			Measure: fmt.Sprintf("LEAK_MEASURE metric=uss unit=bytes warmup=0 samples=[] slope=%g late=0 budget=4KiB/op verdict=GREEN", *s.Measures[0].Slope)})
	}
	b.Score()
	return b, history.Analyze(hist, history.Options{})
}

// The page of a board of 30 sections with 100 runs of history stays one
// self-contained file (nothing fetched, every image inline, no script)
// under historyPageLimit, with a strip of 100 cells per section and a
// trend chart per leak measure.
func TestHistoryPageSize(t *testing.T) {
	b, a := boardWithHistory(30, 100)
	var buf bytes.Buffer
	require.NoError(t, WriteHTML(&buf, b, HTMLOptions{History: map[string]*history.Analysis{"guards": a}}))
	page := buf.String()
	t.Logf("HTML page, 30 sections x 100 runs of history: %d bytes (limit %d)", len(page), historyPageLimit)
	assert.Less(t, len(page), historyPageLimit)

	d := xml.NewDecoder(strings.NewReader(page))
	d.Strict, d.Entity = true, xml.HTMLEntity
	trends, cells := 0, 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "the page is not well-formed")
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		assert.NotContains(t, []string{"script", "link", "iframe", "object", "embed"}, se.Name.Local)
		attrs := map[string]string{}
		for _, at := range se.Attr {
			attrs[at.Name.Local] = at.Value
		}
		if src, ok := attrs["src"]; ok {
			require.True(t, strings.HasPrefix(src, "data:image/svg+xml;base64,"), "an image from elsewhere: %.80s", src)
			svg, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(src, "data:image/svg+xml;base64,"))
			require.NoError(t, err)
			assert.NotContains(t, string(svg), "href", "a chart refers to nothing")
			if attrs["class"] == "trend" {
				trends++
			}
		}
		if strings.HasPrefix(attrs["class"], "cell ") {
			cells++
			assert.True(t, strings.HasPrefix(attrs["href"], "https://github.com/o/r/commit/"), "a cell links its run's commit: %s", attrs["href"])
		}
	}
	assert.Equal(t, 30, trends, "a trend chart per leak measure")
	assert.Equal(t, 30*100, cells, "a strip of 100 cells per section")
	assert.False(t, strings.Contains(page, "url("), "the stylesheet fetches nothing")
	assert.True(t, strings.Contains(page, "66% (66 flips, 0 FLAKY) over 100 runs"), "the flipping section's rate")
}

func TestHistoryMarkdownAndTerminal(t *testing.T) {
	b, a := boardWithHistory(3, 3)
	hist := map[string]*history.Analysis{"guards": a}
	var md bytes.Buffer
	require.NoError(t, WriteMarkdown(&md, b, MarkdownOptions{History: hist, CollapseGreen: true}))
	text := md.String()
	changed := strings.Index(text, "**what changed since 0000002 (run 2, 2026-11-01 01:00)**")
	newRed := strings.Index(text, "| 🆕 new RED | **RED** |  | `TestGuard/s00` | was GREEN |")
	table := strings.Index(text, "| outcome | issue | duration | section | reason |")
	require.Positive(t, changed, text)
	assert.Greater(t, newRed, changed)
	assert.Greater(t, table, newRed, "what changed comes first")
	assert.Contains(t, text, "| GREEN | | | 2 section(s) | collapsed: the JSON and HTML reports list them |")
	assert.NotContains(t, text, "`TestGuard/s01`", "a GREEN row collapses")

	var term bytes.Buffer
	require.NoError(t, WriteTerminalChanges(&term, a, TerminalOptions{}))
	assert.Regexp(t, `^what changed since 0000002 \(run 2, 2026-11-01 01:00\)\n  new RED  RED +TestGuard/s00  was GREEN\n\n$`, term.String())
	term.Reset()
	require.NoError(t, WriteTerminalChanges(&term, &history.Analysis{Board: "guards", Unavailable: "history h.db is unusable: x"}, TerminalOptions{}))
	assert.Equal(t, "history unavailable: history h.db is unusable: x\n\n", term.String())
	term.Reset()
	require.NoError(t, WriteTerminalChanges(&term, nil, TerminalOptions{}))
	assert.Empty(t, term.String(), "history off: nothing")
}
