package report

import (
	"fmt"
	"html/template"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/history"
)

// htmlHistory is a board's history on the page: what changed, the
// suggestions, a strip of recent outcomes per section, the runs.
type htmlHistory struct {
	Sub         bool
	Headline    string
	Unavailable bool
	Changes     []htmlChange
	Suggestions []string
	Strips      []htmlStrip
	Runs        []htmlRun
}

type htmlChange struct {
	changeLine
	Anchor string // the section's detail on this page, "" when it has none
	Link   string // the commit it happened since
}

type htmlStrip struct {
	Label, Anchor string
	Cells         []htmlCell
	Flake         string // "33% (2 flips, 0 FLAKY) over 6 runs"
	FirstFail     string
	FirstFailLink string
}

type htmlCell struct {
	Class, Title, Link string
}

type htmlRun struct {
	Anchor, Time, Commit, Branch, Link string
	ID                                 int64
	ExitCode                           int
}

// runLink leads to a run's commit when the run knows its URL (CI), else
// to the run's line in the page's runs table.
func runLink(prefix string, r *history.Ref) string {
	if r == nil {
		return ""
	}
	if r.CommitURL != "" {
		return r.CommitURL
	}
	return fmt.Sprintf("#%srun%d", prefix, r.ID)
}

// htmlHistoryFor lays out a's history next to the board's rows, and gives
// each row with leak measures its trend charts.
func htmlHistoryFor(a *history.Analysis, b *board.Board, rows []htmlRow, prefix string, sub bool) *htmlHistory {
	h := &htmlHistory{Sub: sub, Headline: historyHeadline(a), Unavailable: a.Unavailable != "", Suggestions: a.Suggestions}
	if h.Unavailable {
		return h
	}
	anchors := map[string]string{}
	for i, s := range b.Sections {
		if rows[i].Detail {
			anchors[s.Test] = rows[i].Anchor
		}
	}
	for _, l := range changes(a) {
		h.Changes = append(h.Changes, htmlChange{changeLine: l, Anchor: anchors[l.Test], Link: runLink(prefix, l.Since)})
	}
	for i, s := range b.Sections {
		sh := a.Sections[history.Key(s.Package, s.Test)]
		if sh == nil {
			continue
		}
		st := htmlStrip{Label: rows[i].Label, Anchor: rows[i].Anchor}
		if !rows[i].Detail {
			st.Anchor = ""
		}
		for _, c := range sh.Cells {
			cell := htmlCell{Class: string(c.Outcome), Link: runLink(prefix, c.Run)}
			if c.Outcome == "" {
				cell.Class, cell.Title = "none", c.Run.Label()+": did not run"
			} else {
				// Short: a strip of 100 runs of 30 sections is 3000 cells.
				cell.Title = fmt.Sprintf("%s %s %s %s", c.Run.Label(), c.Run.Time.UTC().Format("01-02 15:04"), c.Outcome, formatSeconds(c.Duration))
				if c.Attempts > 1 {
					cell.Title += fmt.Sprintf(", %d attempts", c.Attempts)
				}
			}
			st.Cells = append(st.Cells, cell)
		}
		switch {
		case sh.Unstable():
			st.Flake = fmt.Sprintf("%.0f%% (%d flips, %d FLAKY) over %d runs", 100*sh.FlakeRate, sh.Flips, sh.FlakyRuns, sh.Present)
		case sh.Flips == 1:
			st.Flake = fmt.Sprintf("0%%: 1 change (a fix or a regression) over %d runs", sh.Present)
		default:
			st.Flake = fmt.Sprintf("0%% over %d runs", sh.Present)
		}
		if sh.FirstFail != nil {
			st.FirstFail, st.FirstFailLink = history.Since(sh.FirstFail), runLink(prefix, sh.FirstFail)
		}
		h.Strips = append(h.Strips, st)
		for _, t := range sh.Trends {
			url, err := svgDataURL(trendSVG(t))
			if err != nil {
				rows[i].ChartNotes = append(rows[i].ChartNotes, fmt.Sprintf("trend of %s not shown: %v", t.Metric, err))
				continue
			}
			rows[i].Trends = append(rows[i].Trends, htmlChart{Kind: t.Metric + " slope per run", URL: url})
			rows[i].Detail = true
		}
	}
	for i := len(a.Runs) - 1; i >= 0; i-- { // newest first
		r := a.Runs[i]
		h.Runs = append(h.Runs, htmlRun{Anchor: fmt.Sprintf("%srun%d", prefix, r.ID), ID: r.ID, Time: r.Time.UTC().Format("2006-01-02 15:04:05"),
			Commit: history.Short(r.Commit), Branch: r.Branch, Link: r.CommitURL, ExitCode: r.ExitCode})
	}
	return h
}

// The history's parts of the page; html.go's template calls them.
var _ = template.Must(pageTemplate.New("hist-changes").Parse(`<div class="history">
<p class="{{if .Unavailable}}unavailable{{else}}changes-head{{end}}">{{.Headline}}</p>
{{if .Changes}}<table class="changes">
<thead><tr><th>change</th><th>outcome</th><th>issue</th><th>section</th><th></th></tr></thead>
<tbody>
{{range .Changes}}<tr class="{{.Outcome}}"><td class="nowrap">{{.Kind}}</td><td class="outcome">{{.Outcome}}</td><td class="nowrap">{{if .Issue}}#{{.Issue}}{{end}}</td><td class="section">{{if .Anchor}}<a href="#{{.Anchor}}">{{.Test}}</a>{{else}}{{.Test}}{{end}}</td><td class="reason">{{if .Link}}<a href="{{.Link}}">{{.Detail}}</a>{{else}}{{.Detail}}{{end}}</td></tr>
{{end}}</tbody>
</table>
{{end}}{{if .Suggestions}}<ul class="suggestions">{{range .Suggestions}}<li>{{.}}</li>{{end}}</ul>
{{end}}</div>
`))

var _ = template.Must(pageTemplate.New("hist-strips").Parse(`{{if .Strips}}{{if .Sub}}<h3>{{else}}<h2>{{end}}History: the last {{len .Runs}} run(s), oldest left{{if .Sub}}</h3>{{else}}</h2>{{end}}
<div class="wide"><table class="strips">
<thead><tr><th>section</th><th>outcomes</th><th>flake rate</th><th>first failing run in the window</th></tr></thead>
<tbody>
{{range .Strips}}<tr><td class="section">{{if .Anchor}}<a href="#{{.Anchor}}">{{.Label}}</a>{{else}}{{.Label}}{{end}}</td><td class="strip">{{range .Cells}}<a class="cell {{.Class}}" href="{{.Link}}" title="{{.Title}}"></a>{{end}}</td><td class="nowrap">{{.Flake}}</td><td class="nowrap">{{if .FirstFail}}<a href="{{.FirstFailLink}}">{{.FirstFail}}</a>{{end}}</td></tr>
{{end}}</tbody>
</table></div>
<details class="runs" open=""><summary>the runs</summary>
<table>
<thead><tr><th>run</th><th>time (UTC)</th><th>commit</th><th>branch</th><th>exit</th></tr></thead>
<tbody>
{{range .Runs}}<tr id="{{.Anchor}}"><td class="num">{{.ID}}</td><td class="nowrap">{{.Time}}</td><td class="nowrap">{{if .Link}}<a href="{{.Link}}"><code>{{.Commit}}</code></a>{{else}}<code>{{.Commit}}</code>{{end}}</td><td>{{.Branch}}</td><td class="exit{{.ExitCode}}">exit {{.ExitCode}}</td></tr>
{{end}}</tbody>
</table>
</details>
{{end}}`))
