package meter

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/reproboard/reproboard/harness/outcome"
)

// Keywords that open a measurement line.
const (
	LeakMeasure      = "LEAK_MEASURE"      // a process measured by a repro
	LifecycleMeasure = "LIFECYCLE_MEASURE" // in-process, harness/lifecycle
)

// Measure is the machine-readable record of one judged series: every
// sample, the fit and the verdict. The board reads it back with
// ParseMeasure.
type Measure struct {
	Keyword string // LeakMeasure or LifecycleMeasure
	Name    string // optional: what was measured, e.g. the test name
	Metric  Metric
	Unit    Unit
	Warmup  int
	Points  []Point
	Slope   float64 // units per op, NaN if not computed
	Late    float64 // units per op, NaN if not computed
	Budget  Budget
	Verdict outcome.Outcome
	// Sensitivity is the smallest growth per op, in retained units, the run
	// could have told from zero (Verdict.Sensitivity); NaN if not computed.
	Sensitivity float64
	LimitedBy   string // what set the sensitivity: noise, granularity, floor
	Runtime     string // Runtime.Token(): go1.26.8,GOGC=100,GOMEMLIMIT=off
	Ops         int    // operations run
}

// NewMeasure records a series and its verdict as a LEAK_MEASURE.
func NewMeasure(s Series, v Verdict) Measure {
	return Measure{Keyword: LeakMeasure, Metric: s.Metric, Unit: s.Unit, Warmup: v.Warmup,
		Points: s.Points, Slope: v.Slope, Late: v.LateSlope, Budget: v.Budget, Verdict: v.Outcome,
		Sensitivity: v.Sensitivity, LimitedBy: v.LimitedBy, Runtime: v.Runtime.Token(), Ops: v.Ops}
}

var errUnreadableSample = errors.New("unreadable")

// FormatMeasure writes m as one line:
//
//	line    = keyword *( " " key "=" value )
//	keyword = "LEAK_MEASURE" | "LIFECYCLE_MEASURE"
//	keys, in this order: [name] metric unit warmup samples slope late budget verdict
//	                     sensitivity limited_by runtime ops
//	value   = bare | quoted      bare: no space or '"'; quoted: a Go string literal
//	samples = "[" [ sample *( "," sample ) ] "]"
//	sample  = ops ":" ( number | "?" )    "?" is a sample that could not be read
//	number  = exact decimal, as strconv.FormatFloat(v, 'f', -1, 64); NaN if none
//
// unit is "bytes" or "count"; slope and late are units per op; budget is
// spelled as ParseBudget reads it (4KiB/op, 8MiB, 2/op); verdict is an
// outcome (GREEN, RED, INCONCLUSIVE); sensitivity is the smallest
// retained growth per op the run could have seen (NaN if none), limited_by
// what set it (noise, granularity, floor), runtime the target's runtime and
// the knobs read from it (go1.26.8,GOGC=100,GOMEMLIMIT=off; native), ops
// the operations run. Readers ignore keys they do not know,
// so keys may be added at the end.
//
// Example:
//
//	LEAK_MEASURE metric=uss unit=bytes warmup=40 samples=[40:31457280,50:31510528] slope=5222.4 late=5017.6 budget=4KiB/op verdict=RED sensitivity=310.5 limited_by=noise runtime=native ops=400
func FormatMeasure(m Measure) string {
	var b strings.Builder
	b.WriteString(m.Keyword)
	field := func(k, v string) {
		b.WriteString(" " + k + "=")
		if v == "" || strings.ContainsAny(v, " \t\r\n\"") {
			v = strconv.Quote(v)
		}
		b.WriteString(v)
	}
	if m.Name != "" {
		field("name", m.Name)
	}
	field("metric", string(m.Metric))
	field("unit", string(m.Unit))
	field("warmup", strconv.Itoa(m.Warmup))
	var s strings.Builder
	s.WriteByte('[')
	for i, p := range m.Points {
		if i > 0 {
			s.WriteByte(',')
		}
		s.WriteString(strconv.Itoa(p.Ops) + ":")
		if p.Err != nil {
			s.WriteByte('?')
		} else {
			s.WriteString(rawNumber(p.Value))
		}
	}
	s.WriteByte(']')
	field("samples", s.String())
	field("slope", rawNumber(m.Slope))
	field("late", rawNumber(m.Late))
	field("budget", m.Budget.String())
	field("verdict", string(m.Verdict))
	field("sensitivity", rawNumber(m.Sensitivity))
	if m.LimitedBy != "" {
		field("limited_by", m.LimitedBy)
	}
	if m.Runtime != "" {
		field("runtime", m.Runtime)
	}
	field("ops", strconv.Itoa(m.Ops))
	return b.String()
}

// String is FormatMeasure.
func (m Measure) String() string { return FormatMeasure(m) }

// ParseMeasure reads a line written by FormatMeasure. Text before the
// keyword (a log prefix such as "file_test.go:12: ") is skipped.
func ParseMeasure(line string) (Measure, error) {
	m := Measure{Slope: nan(), Late: nan(), Sensitivity: nan()}
	line = strings.TrimSpace(line)
	at := -1
	for _, kw := range []string{LeakMeasure, LifecycleMeasure} {
		if i := strings.Index(line+" ", kw+" "); i >= 0 && (at < 0 || i < at) {
			at, m.Keyword = i, kw
		}
	}
	if at < 0 {
		return m, fmt.Errorf("not a measurement line (want %s or %s ...): %.80q", LeakMeasure, LifecycleMeasure, line)
	}
	rest := line[at+len(m.Keyword):]
	bad := func(key, val string, err error) (Measure, error) {
		return Measure{}, fmt.Errorf("%s: %s=%s: %v", m.Keyword, key, val, err)
	}
	seen := map[string]bool{}
	for {
		rest = strings.TrimLeft(rest, " ")
		if rest == "" {
			break
		}
		key, after, ok := strings.Cut(rest, "=")
		if !ok || key == "" || strings.ContainsRune(key, ' ') {
			return Measure{}, fmt.Errorf("%s: want key=value, got %.40q", m.Keyword, rest)
		}
		var val string
		if strings.HasPrefix(after, `"`) {
			q, err := strconv.QuotedPrefix(after)
			if err != nil {
				return bad(key, after, err)
			}
			val, _ = strconv.Unquote(q)
			rest = after[len(q):]
		} else {
			val, rest, _ = strings.Cut(after, " ")
		}
		seen[key] = true
		var err error
		switch key {
		case "name":
			m.Name = val
		case "metric":
			m.Metric = Metric(val)
		case "unit":
			m.Unit = Unit(val)
			if m.Unit != Bytes && m.Unit != Count {
				err = errors.New("want bytes or count")
			}
		case "warmup":
			m.Warmup, err = strconv.Atoi(val)
		case "samples":
			m.Points, err = parseSamples(val)
		case "slope":
			m.Slope, err = strconv.ParseFloat(val, 64)
		case "late":
			m.Late, err = strconv.ParseFloat(val, 64)
		case "budget":
			if val != "" {
				m.Budget, err = ParseBudget(val)
			}
		case "verdict":
			m.Verdict, err = outcome.Parse(val)
		case "sensitivity":
			m.Sensitivity, err = strconv.ParseFloat(val, 64)
		case "limited_by":
			m.LimitedBy = val
		case "runtime":
			m.Runtime = val
		case "ops":
			m.Ops, err = strconv.Atoi(val)
		}
		if err != nil {
			return bad(key, val, err)
		}
	}
	for _, k := range []string{"metric", "unit", "samples", "verdict"} {
		if !seen[k] {
			return Measure{}, fmt.Errorf("%s: missing %s=", m.Keyword, k)
		}
	}
	return m, nil
}

func parseSamples(s string) ([]Point, error) {
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return nil, errors.New("want [ops:value,...]")
	}
	s = s[1 : len(s)-1]
	if s == "" {
		return nil, nil
	}
	var pts []Point
	for _, item := range strings.Split(s, ",") {
		o, v, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("sample %q: want ops:value", item)
		}
		ops, err := strconv.Atoi(o)
		if err != nil {
			return nil, fmt.Errorf("sample %q: ops: %v", item, err)
		}
		p := Point{Ops: ops}
		if v == "?" {
			p.Value, p.Err = nan(), errUnreadableSample
		} else if p.Value, err = strconv.ParseFloat(v, 64); err != nil {
			return nil, fmt.Errorf("sample %q: value: %v", item, err)
		}
		pts = append(pts, p)
	}
	return pts, nil
}
