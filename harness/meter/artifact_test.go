package meter

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// svgElements parses an SVG and counts its elements by name.
func svgElements(t *testing.T, data []byte) map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	count := map[string]int{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not valid XML: %v\n%s", err, data)
		}
		if se, ok := tok.(xml.StartElement); ok {
			count[se.Name.Local]++
			if se.Name.Local == "svg" && se.Name.Space != "http://www.w3.org/2000/svg" {
				t.Errorf("svg namespace %q", se.Name.Space)
			}
		}
	}
	return count
}

func TestWriteSVG(t *testing.T) {
	s := synth(200, 10, 30*kib, 9, func(o int) float64 { return 30*mib + 6*kib*float64(o) })
	s.Metric = FileMetric(`cache/**/<&>.db-wal`) // must be escaped
	s.Points[5].Err = errors.New(`read "x" & failed`)
	s.Points[5].Value = nan()
	v := Judge(s, Options{Budget: MustParseBudget("4KiB/op"), Warmup: 60})
	var buf bytes.Buffer
	if err := WriteSVG(&buf, s, v); err != nil {
		t.Fatal(err)
	}
	el := svgElements(t, buf.Bytes())
	if el["svg"] != 1 || el["polyline"] != 1 || el["circle"] != len(s.Points)-1 || el["path"] != 1 {
		t.Errorf("elements %v: want 1 svg, 1 polyline, %d circles, 1 unreadable mark", el, len(s.Points)-1)
	}
	out := buf.String()
	for _, want := range []string{`class="fit"`, `class="budget"`, `class="warmup"`, "RED", "slope 6.01KiB/op", "budget 4KiB/op", "MiB</text>", "operations"} {
		if !strings.Contains(out, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if strings.Contains(out, "NaN") {
		t.Error("SVG has NaN coordinates")
	}
}

func TestWriteSVGDegenerate(t *testing.T) {
	// Nothing readable, nothing fitted: still a valid chart that says so.
	s := Series{Metric: USS, Unit: Bytes, Points: []Point{{Ops: 0, Value: nan(), Err: errors.New("gone")}}}
	v := Judge(s, Options{Budget: MustParseBudget("4KiB/op")})
	var buf bytes.Buffer
	if err := WriteSVG(&buf, s, v); err != nil {
		t.Fatal(err)
	}
	svgElements(t, buf.Bytes())
	if !strings.Contains(buf.String(), "INCONCLUSIVE") || strings.Contains(buf.String(), "NaN") {
		t.Errorf("degenerate chart:\n%s", buf.String())
	}
	// Flat series: the y axis must still have a span.
	flat := Series{Metric: FDs, Unit: Count}
	for ops := 0; ops <= 50; ops += 10 {
		flat.Points = append(flat.Points, Point{Ops: ops, Value: 7})
	}
	buf.Reset()
	WriteSVG(&buf, flat, Judge(flat, Options{Budget: MustParseBudget("0.1/op")}))
	svgElements(t, buf.Bytes())
	if strings.Contains(buf.String(), "NaN") || strings.Contains(buf.String(), "Inf") {
		t.Errorf("flat chart has NaN/Inf:\n%s", buf.String())
	}
}

func TestWriteArtifacts(t *testing.T) {
	dir := t.TempDir()
	s := synth(100, 10, 0, 1, func(o int) float64 { return 1000 + float64(o) })
	s.Metric = FileMetric("cache/**/*.db-wal")
	s.Points[2].Err = errors.New("glob: dir gone")
	v := Judge(s, Options{Budget: MustParseBudget("4KiB/op"), Warmup: 30})
	arts, err := WriteArtifacts(dir, "", s, v)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, a := range arts {
		kinds[a.Kind] = a.Path
		if filepath.Dir(a.Path) != dir {
			t.Errorf("%s written outside dir: %s", a.Kind, a.Path)
		}
	}
	for _, k := range []string{"file-cache-db-wal.samples", "file-cache-db-wal.json", "file-cache-db-wal.chart"} {
		if kinds[k] == "" {
			t.Errorf("no artefact %q in %v", k, arts)
		}
	}

	f, _ := os.Open(kinds["file-cache-db-wal.samples"])
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != len(s.Points)+1 || strings.Join(rows[0], ",") != "ops,value,unit,error" ||
		strings.Join(rows[1], ",") != "0,1000,bytes," || strings.Join(rows[3], ",") != "20,,bytes,glob: dir gone" {
		t.Errorf("csv rows %q, %v", rows, err)
	}

	data, _ := os.ReadFile(kinds["file-cache-db-wal.json"])
	var doc struct {
		Metric  string
		Samples []struct {
			Ops   int
			Value *float64
			Error string
		}
		Verdict struct {
			Outcome string
			Slope   *float64 `json:"slope_per_op"`
			Budget  string
		}
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, data)
	}
	if doc.Metric != string(s.Metric) || len(doc.Samples) != len(s.Points) || doc.Samples[2].Value != nil ||
		doc.Samples[2].Error == "" || doc.Verdict.Outcome != "GREEN" || doc.Verdict.Slope == nil || *doc.Verdict.Slope != 1 || doc.Verdict.Budget != "4KiB/op" {
		t.Errorf("json doc %+v", doc)
	}
	svg, _ := os.ReadFile(kinds["file-cache-db-wal.chart"])
	svgElements(t, svg)
}

func TestProgressOnlyOnTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, "uss", 100)
	p.Update(10, Reading{Value: 30 * mib, Unit: Bytes})
	p.Update(20, Reading{Value: 31 * mib, Unit: Bytes}) // within 100ms: skipped
	p.Update(100, Reading{Value: 32 * mib, Unit: Bytes})
	p.Done()
	if got := buf.String(); got != "\r\x1b[Kuss 10/100 ops 30MiB\r\x1b[Kuss 100/100 ops 32MiB\n" {
		t.Errorf("progress wrote %q", got)
	}
	var none *Progress // what NewProgress returns off a terminal
	none.Update(1, Reading{})
	none.Done()
}

// Two series of one metric in one section (two leak lines) keep their own
// files, by name.
func TestWriteArtifactsByName(t *testing.T) {
	dir := t.TempDir()
	s := synth(100, 10, 0, 1, func(o int) float64 { return 1000 + float64(o) })
	v := Judge(s, Options{Budget: MustParseBudget("4KiB/op"), Warmup: 30})
	seen := map[string]bool{}
	for _, name := range []string{"first", "second"} {
		arts, err := WriteArtifacts(dir, name, s, v)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range arts {
			if seen[a.Path] || seen[a.Kind] {
				t.Errorf("%s: %s or %s written twice", name, a.Kind, a.Path)
			}
			seen[a.Path], seen[a.Kind] = true, true
			if !strings.HasPrefix(filepath.Base(a.Path), name+".uss.") || !strings.HasPrefix(a.Kind, name+".uss.") {
				t.Errorf("%s: artefact %s at %s not named by it", name, a.Kind, a.Path)
			}
		}
	}
	if n := len(seen); n != 12 {
		t.Errorf("%d distinct kinds and paths, want 12", n)
	}
	// The sensitivity and the runtime are in the chart and the JSON.
	svg, _ := os.ReadFile(filepath.Join(dir, "first.uss.chart.svg"))
	if !strings.Contains(string(svg), `class="sensitivity"`) || !strings.Contains(string(svg), "runtime native") {
		t.Errorf("chart lacks the sensitivity line:\n%s", svg)
	}
	js, _ := os.ReadFile(filepath.Join(dir, "first.uss.samples.json"))
	for _, k := range []string{`"sensitivity_per_op"`, `"sensitivity_limited_by"`, `"runtime": "native"`, `"ops": 100`} {
		if !strings.Contains(string(js), k) {
			t.Errorf("samples JSON lacks %s:\n%s", k, js)
		}
	}
}
