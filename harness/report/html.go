package report

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"html/template"
	"io"
	"os"
	"strings"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/history"
	"github.com/reproboard/reproboard/harness/outcome"
)

// HTMLOptions shape the HTML report.
type HTMLOptions struct {
	// ReadFile reads chart artefacts; os.ReadFile when nil.
	ReadFile func(path string) ([]byte, error)
	// History is what the history says about each board, by board name:
	// what changed, a strip of recent outcomes per section, and a trend
	// chart per leak measure. Nil: no history.
	History map[string]*history.Analysis
}

// IsChart reports whether an artefact kind is a chart the HTML report
// shows inline: "chart" (reproboard.artifact.chart) or "<metric>.chart"
// (reproboard.artifact.uss.chart), one per measured metric.
func IsChart(kind string) bool { return kind == "chart" || strings.HasSuffix(kind, ".chart") }

// maxChart bounds an embedded chart: a page must stay openable.
const maxChart = 4 << 20

// WriteHTML writes one self-contained page for one board: the table,
// every non-GREEN section's excerpt and every section's chart. Nothing is
// fetched from the network (inline CSS, no scripts, no fonts). Charts are
// embedded as base64 data: images, and only when they parse as XML with an
// <svg> root: an SVG shown through <img> cannot run scripts, so the page
// stays inert whatever a test wrote. The page is also well-formed XML.
func WriteHTML(w io.Writer, b *board.Board, opts HTMLOptions) error {
	return WriteHTMLBoards(w, []*board.Board{b}, opts)
}

// WriteHTMLBoards writes one self-contained page for boards run together,
// in their order: an overall header (the combined exit code, what it
// means, each board's exit code and counts), then each board's section as
// WriteHTML shows it. With one board it is WriteHTML's page.
func WriteHTMLBoards(w io.Writer, boards []*board.Board, opts HTMLOptions) error {
	if len(boards) == 0 {
		return fmt.Errorf("no board to report")
	}
	read := opts.ReadFile
	if read == nil {
		read = os.ReadFile
	}
	multi := len(boards) > 1
	p := htmlPage{Multi: multi}
	p.ExitCode, p.ExitReason = board.Overall(boards)
	p.Meaning = board.ExitMeaning(p.ExitCode)
	if multi {
		var names []string
		for _, b := range boards {
			names = append(names, b.Name)
		}
		p.Title = fmt.Sprintf("reproboard: boards %s (exit %d)", strings.Join(names, ", "), p.ExitCode)
	} else {
		p.Title = fmt.Sprintf("reproboard: board %s (exit %d)", boards[0].Name, boards[0].ExitCode)
	}
	for i, b := range boards {
		hb := htmlBoard{B: b, Sub: multi, Gating: gatingWord(b.Gating), Counts: CountsLine(b.Counts),
			Chips: chips(b.Counts), Meaning: board.ExitMeaning(b.ExitCode)}
		prefix := ""
		if multi {
			hb.ID = fmt.Sprintf("b%d", i+1)
			prefix = hb.ID + "-"
		}
		multiPkg := packageCount(b) > 1
		for j, s := range b.Sections {
			hb.Rows = append(hb.Rows, htmlRowFor(s, sectionLabel(s, multiPkg), fmt.Sprintf("%ss%d", prefix, j+1), read))
		}
		if a := opts.History[b.Name]; a != nil {
			hb.Hist = htmlHistoryFor(a, b, hb.Rows, prefix, multi)
		}
		p.Boards = append(p.Boards, hb)
	}
	return pageTemplate.Execute(w, p)
}

type htmlPage struct {
	Title      string
	Multi      bool
	ExitCode   int
	ExitReason string
	Meaning    string
	Boards     []htmlBoard
}

type htmlBoard struct {
	B       *board.Board
	ID      string // the board section's anchor; "" on a one-board page
	Sub     bool   // a section of a several-board page: headings one level down
	Gating  string
	Counts  string
	Chips   []chip
	Meaning string
	Rows    []htmlRow
	Hist    *htmlHistory // nil: no history
}

type chip struct {
	Outcome outcome.Outcome
	N       int
}

// chips are the non-zero counts, one per outcome, in outcome order.
func chips(c board.Counts) []chip {
	var out []chip
	for _, o := range outcome.All {
		if n := c[string(o)]; n > 0 {
			out = append(out, chip{o, n})
		}
	}
	return out
}

type htmlChart struct {
	Kind string
	URL  template.URL
}

type htmlRow struct {
	board.Section
	Label, Anchor, Dur string
	Detail             bool
	Measures           []string
	Charts             []htmlChart
	Trends             []htmlChart // a leak measure's slope per run, from the history
	ChartNotes         []string
	Others             [][2]string
}

func htmlRowFor(s board.Section, label, anchor string, read func(string) ([]byte, error)) htmlRow {
	r := htmlRow{Section: s, Label: label, Anchor: anchor, Dur: formatSeconds(s.Duration), Measures: measureLines(s.Measure)}
	for _, k := range sortedKeys(s.Artifacts) {
		p := s.Artifacts[k]
		r.Others = append(r.Others, [2]string{k, p})
		if !IsChart(k) {
			continue
		}
		content, err := read(p)
		var url template.URL
		if err == nil {
			url, err = svgDataURL(content)
		}
		if err != nil {
			r.ChartNotes = append(r.ChartNotes, fmt.Sprintf("%s %s not shown: %v", k, p, err))
			continue
		}
		r.Charts = append(r.Charts, htmlChart{k, url})
	}
	r.Detail = s.Outcome != outcome.Green || len(r.Charts)+len(r.ChartNotes) > 0 || s.Measure != ""
	return r
}

// svgDataURL checks that content is an SVG document and makes it a data:
// URL for <img>.
func svgDataURL(content []byte) (template.URL, error) {
	if len(content) > maxChart {
		return "", fmt.Errorf("%d bytes, more than the %d an inline chart may have", len(content), maxChart)
	}
	d := xml.NewDecoder(bytes.NewReader(content))
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
			if root != "svg" {
				return "", fmt.Errorf("root element <%s>, want <svg>", root)
			}
		}
	}
	if root == "" {
		return "", fmt.Errorf("no <svg> element")
	}
	return template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(content)), nil
}

// The stylesheet avoids < and & so the page stays well-formed XML.
var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"partial": PartialLine, "attempt": AttemptLine}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; line-height: 1.4; margin: 0 auto; padding: 1.5em 2em; max-width: 90em; color: #1f2328; background: #fff; }
h1 { font-size: 1.6em; margin: .3em 0; }
h2 { font-size: 1.3em; margin: 1.6em 0 .4em; }
h3 { font-size: 1.05em; margin: 1.4em 0 .3em; }
section.board { margin-top: 2.5em; padding-top: .2em; border-top: 4px solid #d0d7de; }
section.board.bexit0 { border-top-color: #1a7f37; }
section.board.bexit1 { border-top-color: #cf222e; }
section.board.bexit2 { border-top-color: #8250df; }
section.detail { margin-left: .2em; padding-left: 1em; border-left: 3px solid #d0d7de; }
table { border-collapse: collapse; margin: .6em 0; }
th, td { border: 1px solid #d0d7de; padding: .3em .6em; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.num { text-align: right; white-space: nowrap; }
td.outcome, td.nowrap { white-space: nowrap; }
td.reason, li, p { overflow-wrap: anywhere; }
td.section { white-space: nowrap; }
.wide { overflow-x: auto; }
tr.GREEN td.outcome { background: #dafbe1; }
tr.RED td.outcome { background: #ffd8d3; }
tr.KNOWN-RED td.outcome { background: #fff1c5; }
tr.FIXED td.outcome { background: #ddf4ff; }
tr.FLAKY td.outcome { background: #fff1c5; }
tr.SETUP-FAIL td.outcome, tr.INCONCLUSIVE td.outcome { background: #fbefff; }
.chip { display: inline-block; padding: 0 .5em; margin: 0 .3em .2em 0; border-radius: 1em; border: 1px solid #d0d7de; font-size: .9em; white-space: nowrap; }
.chip.GREEN { background: #dafbe1; } .chip.RED { background: #ffd8d3; } .chip.KNOWN-RED { background: #fff1c5; }
.chip.FIXED { background: #ddf4ff; } .chip.FLAKY { background: #fff1c5; } .chip.SETUP-FAIL, .chip.INCONCLUSIVE { background: #fbefff; }
pre { background: #f6f8fa; border: 1px solid #d0d7de; padding: .8em 1em; font-size: .85em; white-space: pre-wrap; overflow-wrap: anywhere; }
pre.measure { background: #fff; }
figure { margin: .8em 0; }
img.chart { display: block; max-width: 100%; height: auto; border: 1px solid #d0d7de; }
figcaption { font-size: .9em; color: #57606a; }
code { overflow-wrap: anywhere; }
.verdict { font-size: 1.1em; }
.legend, .artifacts { color: #57606a; font-size: .9em; }
.exit0 { color: #1a7f37; } .exit1 { color: #cf222e; } .exit2 { color: #8250df; }
section.detail figure { display: inline-block; vertical-align: top; margin-right: 1em; }
.unavailable { color: #8250df; font-weight: bold; }
.changes-head { font-weight: bold; }
td.strip { white-space: nowrap; line-height: 0; }
a.cell { display: inline-block; width: .6em; height: 1.1em; margin-right: 1px; background: #d0d7de; }
a.cell.GREEN { background: #2da44e; } a.cell.RED { background: #cf222e; } a.cell.KNOWN-RED { background: #d4a72c; }
a.cell.FIXED { background: #218bff; } a.cell.FLAKY { background: #fb8f44; } a.cell.SETUP-FAIL, a.cell.INCONCLUSIVE { background: #8250df; }
a.cell.none { background: #f6f8fa; outline: 1px solid #d0d7de; }
</style>
</head>
<body>
{{if .Multi}}<header>
<h1>reproboard: {{len .Boards}} boards, <span class="exit{{.ExitCode}}">exit {{.ExitCode}}</span> ({{.Meaning}})</h1>
<p class="verdict">{{.ExitReason}}</p>
<p class="legend">Exit 0: nothing regressed. Exit 1: a regression (a gating board has a RED or INCONCLUSIVE section, or --strict and a FIXED or FLAKY one). Exit 2: a setup failure, nothing regressed but not everything was verified. A regression beats a setup failure.</p>
<table class="overview">
<thead><tr><th>board</th><th>kind</th><th>exit</th><th>sections</th><th>why</th></tr></thead>
<tbody>
{{range .Boards}}<tr><td class="nowrap"><a href="#{{.ID}}">{{.B.Name}}</a></td><td class="nowrap">{{.Gating}}</td><td class="nowrap exit{{.B.ExitCode}}">exit {{.B.ExitCode}}</td><td class="nowrap">{{.B.Counts.total}}: {{range .Chips}}<span class="chip {{.Outcome}}">{{.N}} {{.Outcome}}</span>{{end}}</td><td class="reason">{{.B.ExitReason}}</td></tr>
{{end}}</tbody>
</table>
</header>
{{range .Boards}}<section class="board bexit{{.B.ExitCode}}" id="{{.ID}}">
<h2>board {{.B.Name}}: <span class="exit{{.B.ExitCode}}">exit {{.B.ExitCode}}</span> ({{.Meaning}})</h2>
{{template "board" .}}</section>
{{end}}{{else}}{{with index .Boards 0}}<h1>board {{.B.Name}}: <span class="exit{{.B.ExitCode}}">exit {{.B.ExitCode}}</span></h1>
{{template "board" .}}{{end}}{{end}}</body>
</html>
{{define "board"}}<p>{{.Gating}} board, target <code>{{.B.Target}}</code>, {{.B.Platform}}{{if .B.Shard}}, shard {{.B.Shard}}{{end}}. {{.Counts}}.</p>
{{if .B.Partial}}<p class="verdict partial">{{partial .B}}</p>
{{end}}<p class="verdict">{{.B.ExitReason}}</p>
{{if .Hist}}{{template "hist-changes" .Hist}}{{end}}<div class="wide"><table class="sections">
<thead><tr><th>outcome</th><th>issue</th><th>duration</th><th>section</th><th>reason</th></tr></thead>
<tbody>
{{range .Rows}}<tr class="{{.Outcome}}"><td class="outcome">{{.Outcome}}</td><td class="nowrap">{{if .Issue}}#{{.Issue}}{{end}}</td><td class="num">{{.Dur}}</td><td class="section">{{if .Detail}}<a href="#{{.Anchor}}">{{.Label}}</a>{{else}}{{.Label}}{{end}}</td><td class="reason">{{.Reason}}</td></tr>
{{end}}</tbody>
</table></div>
{{if .Hist}}{{template "hist-strips" .Hist}}{{end}}{{$sub := .Sub}}{{range .B.Problems}}{{if $sub}}<h3>{{else}}<h2>{{end}}PROBLEM {{.Kind}}{{if $sub}}</h3>{{else}}</h2>{{end}}
<p>{{.Message}}</p>
{{if .Excerpt}}<pre>{{.Excerpt}}</pre>
{{end}}{{end}}{{if .B.Skipped}}{{if $sub}}<h3>{{else}}<h2>{{end}}Skipped, not counted{{if $sub}}</h3>{{else}}</h2>{{end}}
<ul>{{range .B.Skipped}}<li><code>{{.Test}}</code>: {{.Reason}}</li>{{end}}</ul>
{{end}}{{range .Rows}}{{if .Detail}}<section class="detail" id="{{.Anchor}}">
{{if $sub}}<h3>{{else}}<h2>{{end}}<span class="chip {{.Outcome}}">{{.Outcome}}</span> {{.Label}}{{if $sub}}</h3>{{else}}</h2>{{end}}
{{if .Reason}}<p>{{.Reason}}</p>
{{end}}{{if .Attempts}}<ol class="attempts">{{range .Attempts}}<li>{{attempt .}}</li>{{end}}</ol>
{{end}}{{if .Measures}}<pre class="measure">{{range .Measures}}{{.}}
{{end}}</pre>
{{end}}{{range .Charts}}<figure><img class="chart" alt="{{.Kind}}" src="{{.URL}}"/><figcaption>{{.Kind}}</figcaption></figure>
{{end}}{{range .Trends}}<figure><img class="trend" alt="{{.Kind}}" src="{{.URL}}"/><figcaption>{{.Kind}}</figcaption></figure>
{{end}}{{range .ChartNotes}}<p>{{.}}</p>
{{end}}{{if .Others}}<ul class="artifacts">{{range .Others}}<li>artifact {{index . 0}}: <a href="{{index . 1}}"><code>{{index . 1}}</code></a></li>{{end}}</ul>
{{end}}{{if .Excerpt}}<pre>{{.Excerpt}}</pre>
{{end}}</section>
{{end}}{{end}}{{end}}`))
