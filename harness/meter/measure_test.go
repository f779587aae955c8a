package meter

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/reproboard/reproboard/harness/outcome"
)

func TestMeasureRoundTrip(t *testing.T) {
	s := synth(100, 10, 1000, 3, func(o int) float64 { return 30*mib + 5*kib*float64(o) + 0.5 })
	s.Points[0].Err = errors.New("not started")
	v := Judge(s, Options{Budget: MustParseBudget("4KiB/op"), Warmup: 10})
	m := NewMeasure(s, v)
	line := FormatMeasure(m)
	if !strings.HasPrefix(line, "LEAK_MEASURE metric=uss unit=bytes warmup=10 samples=[0:?,10:") || !strings.Contains(line, " budget=4KiB/op verdict=RED sensitivity=") ||
		!strings.HasSuffix(line, " runtime=native ops=100") {
		t.Errorf("line = %s", line)
	}
	if strings.Contains(line, "\n") {
		t.Error("line has a newline")
	}
	got, err := ParseMeasure("proc_test.go:12: " + line)
	if err != nil {
		t.Fatal(err)
	}
	if got.Keyword != LeakMeasure || got.Metric != m.Metric || got.Unit != m.Unit || got.Warmup != 10 ||
		got.Slope != m.Slope || got.Late != m.Late || got.Budget.String() != "4KiB/op" || got.Verdict != outcome.Red ||
		got.Sensitivity != m.Sensitivity || got.LimitedBy != m.LimitedBy || got.Runtime != "native" || got.Ops != 100 {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, m)
	}
	if len(got.Points) != len(m.Points) || got.Points[0].Err == nil {
		t.Fatalf("points: got %d (first %+v), want %d with the first unreadable", len(got.Points), got.Points[0], len(m.Points))
	}
	for i := 1; i < len(m.Points); i++ {
		if got.Points[i].Ops != m.Points[i].Ops || got.Points[i].Value != m.Points[i].Value {
			t.Errorf("point %d: got %+v want %+v", i, got.Points[i], m.Points[i])
		}
	}
	if FormatMeasure(got) != line {
		t.Errorf("reformatted line differs:\n%s\n%s", FormatMeasure(got), line)
	}
}

func TestMeasureQuotingAndNaN(t *testing.T) {
	m := Measure{Keyword: LifecycleMeasure, Name: `TestX/a "b" c`, Metric: FileMetric("my cache/*.wal"), Unit: Bytes,
		Slope: math.NaN(), Late: math.NaN(), Verdict: outcome.Inconclusive}
	line := FormatMeasure(m)
	got, err := ParseMeasure(line)
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	if got.Name != m.Name || got.Metric != m.Metric || !math.IsNaN(got.Slope) || got.Budget.Unit != "" || len(got.Points) != 0 {
		t.Errorf("%s parsed to %+v", line, got)
	}
}

func TestParseMeasureErrors(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"hello", "not a measurement line"},
		{"LEAK_MEASURE metric=uss unit=bytes samples=[] verdict=BLUE", "unknown outcome"},
		{"LEAK_MEASURE metric=uss unit=furlongs samples=[] verdict=RED", "bytes or count"},
		{"LEAK_MEASURE metric=uss unit=bytes samples=[1:x] verdict=RED", `sample "1:x"`},
		{"LEAK_MEASURE metric=uss unit=bytes verdict=RED", "missing samples="},
		{"LEAK_MEASURE metric=uss unit=bytes samples=[] budget=4KiB/s verdict=RED", "unknown rate"},
		{"LEAK_MEASURE metric=uss junk", "want key=value"},
	} {
		_, err := ParseMeasure(tc.line)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseMeasure(%q) error %v, want %q", tc.line, err, tc.want)
		}
	}
}
