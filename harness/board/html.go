package board

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"html/template"
	"io"
	"os"
	"strings"

	"github.com/reproboard/reproboard/harness/outcome"
)

// HTMLOptions shape the HTML report.
type HTMLOptions struct {
	// ReadFile reads chart artefacts; os.ReadFile when nil.
	ReadFile func(path string) ([]byte, error)
}

// IsChart reports whether an artefact kind is a chart the HTML report
// shows inline: "chart" (reproboard.artifact.chart) or "<metric>.chart"
// (reproboard.artifact.uss.chart), one per measured metric.
func IsChart(kind string) bool { return kind == "chart" || strings.HasSuffix(kind, ".chart") }

// maxChart bounds an embedded chart: a page must stay openable.
const maxChart = 4 << 20

// WriteHTML writes one self-contained page: the table, every non-GREEN
// section's excerpt and every section's chart. Nothing is fetched from the
// network (inline CSS, no scripts, no fonts). Charts are embedded as
// base64 data: images, and only when they parse as XML with an <svg> root:
// an SVG shown through <img> cannot run scripts, so the page stays inert
// whatever a test wrote. The page is also well-formed XML.
func WriteHTML(w io.Writer, b *Board, opts HTMLOptions) error {
	read := opts.ReadFile
	if read == nil {
		read = os.ReadFile
	}
	type chart struct {
		Kind string
		URL  template.URL
	}
	type row struct {
		Section
		Label, Anchor, Dur string
		Detail             bool
		Charts             []chart
		ChartNotes         []string
		Others             [][2]string
	}
	data := struct {
		B        *Board
		Rows     []row
		Gating   string
		Counts   string
		Problems []Problem
	}{B: b, Gating: gatingWord(b.Gating), Counts: CountsLine(b.Counts), Problems: b.Problems}
	multiPkg := packageCount(b) > 1
	for i, s := range b.Sections {
		r := row{Section: s, Label: sectionLabel(s, multiPkg), Anchor: fmt.Sprintf("s%d", i+1), Dur: formatSeconds(s.Duration)}
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
			r.Charts = append(r.Charts, chart{k, url})
		}
		r.Detail = s.Outcome != outcome.Green || len(r.Charts)+len(r.ChartNotes) > 0 || s.Measure != ""
		data.Rows = append(data.Rows, r)
	}
	return pageTemplate.Execute(w, data)
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
var pageTemplate = template.Must(template.New("board").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>reproboard: board {{.B.Name}} (exit {{.B.ExitCode}})</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: .3em .6em; text-align: left; vertical-align: top; }
td.num { text-align: right; }
tr.GREEN td:first-child { background: #d8f5d0; }
tr.RED td:first-child { background: #f8c8c8; }
tr.KNOWN-RED td:first-child { background: #fbe3b8; }
tr.FIXED td:first-child { background: #c8e8f8; }
tr.SETUP-FAIL td:first-child, tr.INCONCLUSIVE td:first-child { background: #e8d0f0; }
pre { background: #f6f6f6; padding: 1em; overflow-x: auto; white-space: pre-wrap; }
img.chart { max-width: 100%; border: 1px solid #ddd; }
.exit0 { color: #1a7f37; } .exit1 { color: #cf222e; } .exit2 { color: #8250df; }
</style>
</head>
<body>
<h1>board {{.B.Name}}: <span class="exit{{.B.ExitCode}}">exit {{.B.ExitCode}}</span></h1>
<p>{{.Gating}} board, target <code>{{.B.Target}}</code>, {{.B.Platform}}{{if .B.Shard}}, shard {{.B.Shard}}{{end}}. {{.Counts}}.</p>
<p>{{.B.ExitReason}}</p>
<table>
<thead><tr><th>outcome</th><th>issue</th><th>duration</th><th>section</th><th>reason</th></tr></thead>
<tbody>
{{range .Rows}}<tr class="{{.Outcome}}"><td>{{.Outcome}}</td><td>{{if .Issue}}#{{.Issue}}{{end}}</td><td class="num">{{.Dur}}</td><td>{{if .Detail}}<a href="#{{.Anchor}}">{{.Label}}</a>{{else}}{{.Label}}{{end}}</td><td>{{.Reason}}</td></tr>
{{end}}</tbody>
</table>
{{range .Problems}}<h2>PROBLEM {{.Kind}}</h2>
<p>{{.Message}}</p>
{{if .Excerpt}}<pre>{{.Excerpt}}</pre>{{end}}
{{end}}{{if .B.Skipped}}<h2>Skipped, not counted</h2>
<ul>{{range .B.Skipped}}<li><code>{{.Test}}</code>: {{.Reason}}</li>{{end}}</ul>
{{end}}{{range .Rows}}{{if .Detail}}<section id="{{.Anchor}}">
<h2>{{.Outcome}} {{.Label}}</h2>
<p>{{.Reason}}</p>
{{if .Measure}}<pre class="measure">{{.Measure}}</pre>
{{end}}{{range .Charts}}<figure><img class="chart" alt="{{.Kind}}" src="{{.URL}}"/><figcaption>{{.Kind}}</figcaption></figure>
{{end}}{{range .ChartNotes}}<p>{{.}}</p>
{{end}}{{if .Others}}<ul>{{range .Others}}<li>artifact {{index . 0}}: <code>{{index . 1}}</code></li>{{end}}</ul>
{{end}}{{if .Excerpt}}<pre>{{.Excerpt}}</pre>
{{end}}</section>
{{end}}{{end}}</body>
</html>
`))
