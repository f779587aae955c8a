package meter

import (
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/reproboard/reproboard/harness/outcome"
)

// WriteCSV writes the samples as ops,value,unit,error; an unreadable sample
// has an empty value and its error.
func WriteCSV(w io.Writer, s Series) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"ops", "value", "unit", "error"})
	for _, p := range s.Points {
		val, msg := rawNumber(p.Value), ""
		if p.Err != nil {
			val, msg = "", p.Err.Error()
		}
		cw.Write([]string{strconv.Itoa(p.Ops), val, string(s.Unit), msg})
	}
	cw.Flush()
	return cw.Error()
}

type jsonPoint struct {
	Ops   int      `json:"ops"`
	Value *float64 `json:"value,omitempty"`
	Error string   `json:"error,omitempty"`
}

type jsonVerdict struct {
	Outcome   outcome.Outcome `json:"outcome"`
	Reason    string          `json:"reason"`
	Slope     *float64        `json:"slope_per_op,omitempty"`
	LateSlope *float64        `json:"late_slope_per_op,omitempty"`
	Intercept *float64        `json:"intercept,omitempty"`
	Budget    string          `json:"budget"`
	Warmup    int             `json:"warmup_ops"`
	Used      int             `json:"samples_used"`
	Ops       int             `json:"ops"`
	// The smallest retained growth per op the run could have seen, and
	// what set it (noise, granularity, floor).
	Sensitivity *float64 `json:"sensitivity_per_op,omitempty"`
	LimitedBy   string   `json:"sensitivity_limited_by,omitempty"`
	NeedOps     int      `json:"ops_needed,omitempty"`
	Runtime     string   `json:"runtime"`
	GainMin     float64  `json:"footprint_per_retained_min"`
	GainMax     float64  `json:"footprint_per_retained_max"`
	Floor       float64  `json:"runtime_floor_bytes,omitempty"`
}

// WriteJSON writes the samples and the verdict as one JSON object. Numbers
// that were not computed (NaN) are left out, as JSON has no NaN.
func WriteJSON(w io.Writer, s Series, v Verdict) error {
	num := func(f float64) *float64 {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return &f
	}
	doc := struct {
		Metric  Metric      `json:"metric"`
		Unit    Unit        `json:"unit"`
		Samples []jsonPoint `json:"samples"`
		Verdict jsonVerdict `json:"verdict"`
	}{Metric: s.Metric, Unit: s.Unit, Samples: []jsonPoint{}, Verdict: jsonVerdict{
		Outcome: v.Outcome, Reason: v.Reason, Slope: num(v.Slope), LateSlope: num(v.LateSlope),
		Intercept: num(v.Intercept), Budget: v.Budget.String(), Warmup: v.Warmup, Used: v.Used,
		Ops: v.Ops, Sensitivity: num(v.Sensitivity), LimitedBy: v.LimitedBy, NeedOps: v.NeedOps,
		Runtime: v.Runtime.String(), Floor: v.Runtime.floor(s.Metric),
	}}
	doc.Verdict.GainMin, doc.Verdict.GainMax = v.Runtime.gains(s.Metric)
	for _, p := range s.Points {
		jp := jsonPoint{Ops: p.Ops}
		if p.Err != nil {
			jp.Error = p.Err.Error()
		} else {
			jp.Value = num(p.Value)
		}
		doc.Samples = append(doc.Samples, jp)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// Artifact is a file written for the board: Kind is unique per metric
// (e.g. "uss.chart") so it can be recorded with outcome.Artifact.
type Artifact struct {
	Kind string
	Path string
}

// WriteArtifacts writes the samples (CSV and JSON) and the chart (SVG) of
// one judged series into dir, named after the metric and prefixed by name
// (a leak command's -name) so that several series of one section do not
// overwrite each other: NAME.uss.chart.svg, kind NAME.uss.chart. An empty
// name leaves the prefix out.
func WriteArtifacts(dir, name string, s Series, v Verdict) ([]Artifact, error) {
	slug := Slug(string(s.Metric))
	if name != "" {
		slug = Slug(name) + "." + slug
	}
	files := []struct {
		kind, name string
		write      func(io.Writer) error
	}{
		{"samples", slug + ".samples.csv", func(w io.Writer) error { return WriteCSV(w, s) }},
		{"json", slug + ".samples.json", func(w io.Writer) error { return WriteJSON(w, s, v) }},
		{"chart", slug + ".chart.svg", func(w io.Writer) error { return WriteSVG(w, s, v) }},
	}
	var out []Artifact
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		fh, err := os.Create(p)
		if err != nil {
			return out, err
		}
		err = f.write(fh)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return out, fmt.Errorf("writing %s: %v", p, err)
		}
		out = append(out, Artifact{Kind: slug + "." + f.kind, Path: p})
	}
	return out, nil
}

// Slug turns a metric name such as "file:cache/**/*.db-wal" into a string
// safe for file names and attribute keys: "file-cache-db-wal".
func Slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_'
		if !ok {
			dash = b.Len() > 0
			continue
		}
		if dash {
			b.WriteByte('-')
			dash = false
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "metric"
	}
	return b.String()
}

// WriteSVG draws the series against operations: the warmup shaded, the
// samples as points joined by a polyline, unreadable samples as red marks
// on the x axis, the fitted Theil–Sen line and the budget's slope from the
// same start, with axes in human units and the verdict in the title. The
// file is self-contained SVG 1.1.
func WriteSVG(w io.Writer, s Series, v Verdict) error {
	const (
		width, height            = 760.0, 420.0
		left, right, top, bottom = 90.0, 24.0, 48.0, 56.0
		plotW, plotH             = width - left - right, height - top - bottom
	)
	u := s.Unit
	xlo, xhi := math.Inf(1), math.Inf(-1)
	ylo, yhi := math.Inf(1), math.Inf(-1)
	for _, p := range s.Points {
		xlo, xhi = math.Min(xlo, float64(p.Ops)), math.Max(xhi, float64(p.Ops))
		if p.Err == nil && !math.IsNaN(p.Value) {
			ylo, yhi = math.Min(ylo, p.Value), math.Max(yhi, p.Value)
		}
	}
	if math.IsInf(xlo, 0) {
		xlo, xhi = 0, 1
	}
	xlo = math.Min(xlo, float64(v.Warmup))
	if xhi <= xlo {
		xhi = xlo + 1
	}
	// The fit starts at the first sample after warmup.
	fitX0 := math.Inf(1)
	for _, p := range s.Points {
		if p.Ops >= v.Warmup {
			fitX0 = math.Min(fitX0, float64(p.Ops))
		}
	}
	lastX := xhi // before the axis is widened to round ticks
	allowed := v.Budget.perOp(int(lastX - fitX0))
	fit := !math.IsNaN(v.Slope) && !math.IsNaN(v.Intercept) && !math.IsInf(fitX0, 0)
	fitAt := func(x float64) float64 { return v.Intercept + v.Slope*x }
	budgetAt := func(x float64) float64 {
		return fitAt(fitX0) + allowed*(x-fitX0)
	}
	hasBudget := fit && v.Budget.Unit == u
	if fit {
		for _, x := range []float64{fitX0, lastX} {
			ylo, yhi = math.Min(ylo, fitAt(x)), math.Max(yhi, fitAt(x))
		}
	}
	if math.IsInf(ylo, 0) {
		ylo, yhi = 0, 1
	}
	if yhi-ylo < 1e-9*math.Max(1, math.Abs(yhi)) {
		ylo, yhi = ylo-1, yhi+1
	}
	yticks := unitTicks(u, ylo, yhi, 6)
	ylo, yhi = math.Min(ylo, yticks[0]), math.Max(yhi, yticks[len(yticks)-1])
	xticks := niceTicks(xlo, xhi, 8)
	xlo, xhi = math.Min(xlo, xticks[0]), math.Max(xhi, xticks[len(xticks)-1])
	px := func(x float64) float64 { return left + (x-xlo)/(xhi-xlo)*plotW }
	py := func(y float64) float64 { return top + plotH - (y-ylo)/(yhi-ylo)*plotH }
	// A budget line may leave the plot; clip it to the top edge.
	budgetEnd := lastX
	if hasBudget && allowed > 0 && budgetAt(lastX) > yhi {
		budgetEnd = fitX0 + (yhi-budgetAt(fitX0))/allowed
	}

	color := map[outcome.Outcome]string{outcome.Red: "#c62828", outcome.Green: "#2e7d32"}[v.Outcome]
	if color == "" {
		color = "#757575"
	}
	title := fmt.Sprintf("%s: %s", s.Metric, v.Outcome)
	if !math.IsNaN(v.Slope) {
		title += fmt.Sprintf(" — slope %s/op", u.Human(v.Slope))
	}
	if v.Budget.Unit != "" {
		title += ", budget " + v.Budget.String()
	}
	title += fmt.Sprintf(", %d samples after %d warmup ops", v.Used, v.Warmup)
	subtitle := "runtime " + v.Runtime.String()
	if !math.IsNaN(v.Sensitivity) {
		subtitle = fmt.Sprintf("sensitivity %s/op (%s), %d ops, %s", u.Human(v.Sensitivity), v.LimitedBy, v.Ops, subtitle)
	}

	var b strings.Builder
	f := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	f(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	f(`<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	f("<title>%s</title>\n", esc(v.Reason))
	f(`<rect x="0" y="0" width="%g" height="%g" fill="#ffffff"/>`+"\n", width, height)
	if v.Warmup > 0 && float64(v.Warmup) > xlo {
		x1 := px(math.Min(float64(v.Warmup), xhi))
		f(`<rect class="warmup" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#eeeeee"/>`+"\n", left, top, x1-left, plotH)
		f(`<text x="%.1f" y="%.1f" fill="#757575" text-anchor="middle">warmup</text>`+"\n", (left+x1)/2, top+14)
	}
	for _, t := range yticks {
		f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e0e0e0"/>`+"\n", left, py(t), left+plotW, py(t))
		f(`<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, py(t)+4, esc(u.Human(t)))
	}
	for _, t := range xticks {
		f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000000"/>`+"\n", px(t), top+plotH, px(t), top+plotH+5)
		f(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(t), top+plotH+18, esc(trimNumber(t)))
	}
	f(`<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000000"/>`+"\n", left, top+plotH, left+plotW, top+plotH)
	f(`<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000000"/>`+"\n", left, top, left, top+plotH)
	f(`<text x="%.1f" y="%.1f" text-anchor="middle">operations</text>`+"\n", left+plotW/2-120, height-12)
	f(`<text x="14" y="%.1f" text-anchor="middle" transform="rotate(-90 14 %.1f)">%s (%s)</text>`+"\n", top+plotH/2, top+plotH/2, esc(string(s.Metric)), u)
	f(`<text x="%.1f" y="24" font-size="14" font-weight="bold" fill="%s">%s</text>`+"\n", left, color, esc(title))
	f(`<text class="sensitivity" x="%.1f" y="40" fill="#57606a">%s</text>`+"\n", left, esc(subtitle))

	var pts []string
	for _, p := range s.Points {
		if p.Err == nil && !math.IsNaN(p.Value) {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(float64(p.Ops)), py(p.Value)))
		}
	}
	f(`<polyline class="samples" points="%s" fill="none" stroke="#90a4ae" stroke-width="1"/>`+"\n", strings.Join(pts, " "))
	for _, p := range s.Points {
		x := px(float64(p.Ops))
		if p.Err != nil || math.IsNaN(p.Value) {
			msg := "unreadable"
			if p.Err != nil {
				msg += ": " + p.Err.Error()
			}
			f(`<path class="unreadable" d="M%.1f %.1f l6 6 m0 -6 l-6 6" stroke="#c62828" stroke-width="2"><title>%d ops: %s</title></path>`+"\n", x-3, top+plotH-9, p.Ops, esc(msg))
			continue
		}
		f(`<circle cx="%.1f" cy="%.1f" r="2.5" fill="#37474f"><title>%d ops: %s</title></circle>`+"\n", x, py(p.Value), p.Ops, esc(u.Human(p.Value)))
	}
	if hasBudget {
		f(`<line class="budget" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#f9a825" stroke-width="1.5" stroke-dasharray="2 3"><title>budget %s</title></line>`+"\n",
			px(fitX0), py(budgetAt(fitX0)), px(budgetEnd), py(budgetAt(budgetEnd)), esc(v.Budget.String()))
	}
	if fit {
		f(`<line class="fit" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="6 4"><title>Theil–Sen fit, %s/op</title></line>`+"\n",
			px(fitX0), py(fitAt(fitX0)), px(lastX), py(fitAt(lastX)), color, esc(u.Human(v.Slope)))
	}
	// Legend in the bottom margin, right-aligned, where no data can cover it.
	lx := left + plotW - 330
	if fit {
		f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="6 4"/>`+"\n", lx, height-16, lx+24, height-16, color)
		f(`<text x="%.1f" y="%.1f">Theil–Sen fit</text>`+"\n", lx+30, height-12)
	}
	if hasBudget {
		f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#f9a825" stroke-width="1.5" stroke-dasharray="2 3"/>`+"\n", lx+120, height-16, lx+144, height-16)
		f(`<text x="%.1f" y="%.1f">budget slope</text>`+"\n", lx+150, height-12)
	}
	f(`<text x="%.1f" y="%.1f" fill="#c62828">× unreadable</text>`+"\n", lx+240, height-12)
	f("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// unitTicks places byte ticks on round numbers of the unit they are shown
// in (29.5MiB, 30MiB), not on round numbers of bytes (29.6MiB).
func unitTicks(u Unit, lo, hi float64, n int) []float64 {
	scale := 1.0
	if u == Bytes {
		for m := math.Max(math.Abs(lo), math.Abs(hi)); m >= 1024*scale && scale < 1<<50; {
			scale *= 1024
		}
	}
	ticks := niceTicks(lo/scale, hi/scale, n)
	for i := range ticks {
		ticks[i] *= scale
	}
	return ticks
}

// niceTicks returns about n round tick values (steps of 1, 2 or 5 times a
// power of ten) covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	span := hi - lo
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []float64
	for t := math.Floor(lo/step) * step; t <= hi+step*1e-9; t += step {
		ticks = append(ticks, t)
		if len(ticks) > 4*n {
			break
		}
	}
	if last := ticks[len(ticks)-1]; last < hi {
		ticks = append(ticks, last+step)
	}
	return ticks
}

func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// SlugPath is Slug applied to each "/"-separated part of a test name, so
// TestRepro/issue581 becomes the directory TestRepro/issue581.
func SlugPath(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = Slug(p)
	}
	return strings.Join(parts, "/")
}
