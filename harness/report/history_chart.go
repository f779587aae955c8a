package report

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/reproboard/reproboard/harness/history"
	"github.com/reproboard/reproboard/harness/meter"
	"github.com/reproboard/reproboard/harness/outcome"
)

// trendSVG draws one leak metric's slope per run, oldest left: a point per
// run coloured by its verdict, the sensitivity (the smallest slope the
// measurement could tell from noise) dashed where the runs carry it, and
// the current per-op budget as a line.
func trendSVG(t history.Trend) []byte {
	const (
		width, height            = 520.0, 200.0
		left, right, top, bottom = 80.0, 16.0, 30.0, 40.0
		plotW, plotH             = width - left - right, height - top - bottom
	)
	unit := meter.Unit(t.Unit)
	budget := math.NaN()
	if b, err := meter.ParseBudget(t.Budget); err == nil && b.PerOp {
		budget = b.Value
	}
	lo, hi := 0.0, math.Inf(-1)
	for _, p := range t.Points {
		for _, v := range []*float64{p.Slope, p.Sensitivity} {
			if v != nil {
				lo, hi = math.Min(lo, *v), math.Max(hi, *v)
			}
		}
	}
	if !math.IsNaN(budget) {
		hi = math.Max(hi, budget)
	}
	if math.IsInf(hi, 0) || hi <= lo {
		hi = lo + 1
	}
	hi += (hi - lo) * 0.08
	n := len(t.Points)
	x := func(i int) float64 {
		if n == 1 {
			return left + plotW/2
		}
		return left + plotW*float64(i)/float64(n-1)
	}
	y := func(v float64) float64 { return top + plotH*(1-(v-lo)/(hi-lo)) }
	human := func(v float64) string {
		if unit == meter.Bytes || unit == meter.Count {
			return unit.Human(v) + "/op"
		}
		return fmt.Sprintf("%.4g/op", v)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`, width, height, width, height)
	title := fmt.Sprintf("%s slope per run, %d run(s)", t.Metric, n)
	fmt.Fprintf(&b, `<title>%s</title><rect width="100%%" height="100%%" fill="#fff"/>`, html.EscapeString(title))
	fmt.Fprintf(&b, `<text class="title" x="%.0f" y="18" font-size="13">%s</text>`, left, html.EscapeString(title))
	fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#d0d7de"/>`, left, top, plotW, plotH)
	for _, v := range []float64{lo, (lo + hi) / 2, hi} {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end" fill="#57606a">%s</text>`, left-6, y(v)+4, html.EscapeString(human(v)))
	}
	if !math.IsNaN(budget) {
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#cf222e" stroke-dasharray="6 3"/>`, left, left+plotW, y(budget), y(budget))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end" fill="#cf222e">budget %s</text>`, left+plotW-4, y(budget)-4, html.EscapeString(t.Budget))
	}
	line := func(get func(history.TrendPoint) *float64, style string) {
		var pts []string
		flush := func() {
			if len(pts) > 1 {
				fmt.Fprintf(&b, `<polyline fill="none" %s points="%s"/>`, style, strings.Join(pts, " "))
			}
			pts = pts[:0]
		}
		for i, p := range t.Points {
			v := get(p)
			if v == nil {
				flush()
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(*v)))
		}
		flush()
	}
	line(func(p history.TrendPoint) *float64 { return p.Sensitivity }, `stroke="#8c959f" stroke-dasharray="3 3"`)
	line(func(p history.TrendPoint) *float64 { return p.Slope }, `stroke="#0969da" stroke-width="1.5"`)
	// A dot per run, one path per verdict colour: no element per point,
	// so a chart of 100 runs stays small (a title per point would not
	// show anyway: the chart is an <img>).
	dots := map[string]*strings.Builder{}
	var colours []string
	for i, p := range t.Points {
		if p.Slope == nil {
			continue
		}
		c := verdictColor(p.Verdict)
		if dots[c] == nil {
			dots[c] = &strings.Builder{}
			colours = append(colours, c)
		}
		fmt.Fprintf(dots[c], "M%.1f,%.1fh0", x(i), y(*p.Slope))
	}
	for _, c := range colours {
		fmt.Fprintf(&b, `<path d="%s" stroke="%s" stroke-width="7" stroke-linecap="round"/>`, dots[c].String(), c)
	}
	label := func(i int, anchor string) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="%s" fill="#57606a">%s</text>`, x(i), top+plotH+16, anchor, html.EscapeString(t.Points[i].Run.Label()))
	}
	if n == 1 {
		label(0, "middle")
	} else if n > 1 {
		label(0, "start")
		label(n-1, "end")
	}
	legend := "points: slope per run (colour: verdict)"
	for _, p := range t.Points {
		if p.Sensitivity != nil {
			legend += "; dashed: sensitivity"
			break
		}
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="#57606a">%s</text>`, left, height-6, html.EscapeString(legend))
	b.WriteString(`</svg>`)
	return b.Bytes()
}

func verdictColor(o outcome.Outcome) string {
	switch o {
	case outcome.Red:
		return "#cf222e"
	case outcome.Green:
		return "#1a7f37"
	}
	return "#8250df"
}
