package meter

import (
	"fmt"
	"math"
	"slices"

	"github.com/reproboard/reproboard/harness/outcome"
)

// Point is one sample of one metric: the value after Ops operations.
// Err marks a sample that could not be read; its Value means nothing.
type Point struct {
	Ops   int
	Value float64
	Err   error
}

// Series is the samples of one metric, in the order taken.
type Series struct {
	Metric Metric
	Unit   Unit
	Points []Point
}

// Add appends the reading taken after ops operations.
func (s *Series) Add(ops int, r Reading) {
	s.Points = append(s.Points, Point{Ops: ops, Value: r.Value, Err: r.Err})
}

// Options say how Judge reads a series.
type Options struct {
	Budget Budget
	// Warmup is the number of ops whose samples are discarded. The sample
	// taken at exactly Warmup ops is kept: it is the baseline after warmup.
	Warmup int
	// MinSamples is the fewest samples after warmup that can be judged; 0
	// means DefaultMinSamples.
	MinSamples int
	// OpErr is set when the repeated operation failed: whatever the memory
	// did, it did not measure the operation, so the verdict is INCONCLUSIVE.
	OpErr error
}

// DefaultMinSamples is the fewest post-warmup samples Judge accepts: with
// fewer, one noisy batch decides the slope.
const DefaultMinSamples = 5

// Verdict is the judgement of one series.
type Verdict struct {
	Metric    Metric
	Unit      Unit
	Outcome   outcome.Outcome
	Reason    string  // one line, starts with the outcome
	Slope     float64 // Theil–Sen slope after warmup, units per op; NaN if not computed
	LateSlope float64 // Theil–Sen slope of the later half; NaN if not computed
	Intercept float64 // of the fitted line value = Intercept + Slope*ops
	Budget    Budget
	Warmup    int
	Used      int // samples after warmup
}

// Judge decides whether a series shows a leak.
//
// INCONCLUSIVE when the operation failed, no budget was given or its unit
// differs from the series', any sample at or after warmup is unreadable, or
// fewer than MinSamples remain. Otherwise, with s the Theil–Sen slope (the
// median of the pairwise slopes) of the samples at or after warmup, late
// the Theil–Sen slope of their later half (the last ceil(n/2) samples), and
// b the budget per op (a total budget divided by the ops the samples span):
// RED when s > b and late > b, so growth persisted to the end; GREEN
// otherwise (s <= b: within budget; late <= b: a step, then a plateau).
func Judge(s Series, o Options) Verdict {
	v := Verdict{Metric: s.Metric, Unit: s.Unit, Budget: o.Budget, Warmup: o.Warmup,
		Slope: nan(), LateSlope: nan(), Intercept: nan()}
	minN := o.MinSamples
	if minN <= 0 {
		minN = DefaultMinSamples
	}
	var used []Point
	for _, p := range s.Points {
		if p.Ops >= o.Warmup {
			used = append(used, p)
		}
	}
	v.Used = len(used)
	name := string(s.Metric)
	after := fmt.Sprintf("%d samples after %d warmup ops", len(used), o.Warmup)
	inconclusive := func(format string, args ...any) Verdict {
		v.Outcome = outcome.Inconclusive
		v.Reason = fmt.Sprintf("INCONCLUSIVE %s ", name) + fmt.Sprintf(format, args...)
		return v
	}
	if o.OpErr != nil {
		return inconclusive("not measured: the operation failed: %v", o.OpErr)
	}
	if o.Budget.Unit == "" {
		return inconclusive("has no budget to judge against (want e.g. 4KiB/op or 8MiB)")
	}
	if o.Budget.Unit != s.Unit {
		return inconclusive("is in %s but budget %s is in %s", s.Unit, o.Budget, o.Budget.Unit)
	}
	for _, p := range used {
		if p.Err != nil {
			return inconclusive("unreadable at %d ops: %v", p.Ops, p.Err)
		}
		if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
			return inconclusive("unreadable at %d ops: value %v", p.Ops, p.Value)
		}
	}
	if len(used) < minN {
		return inconclusive("has only %s, need %d: run more batches or shorten the warmup", after, minN)
	}
	xs, ys := make([]float64, len(used)), make([]float64, len(used))
	for i, p := range used {
		xs[i], ys[i] = float64(p.Ops), p.Value
	}
	slope, ok := theilSen(xs, ys)
	if !ok {
		return inconclusive("samples all at the same op count %d: nothing to fit", used[0].Ops)
	}
	h := len(used) / 2
	late, _ := theilSen(xs[h:], ys[h:])
	v.Slope, v.LateSlope, v.Intercept = slope, late, intercept(xs, ys, slope)

	span := used[len(used)-1].Ops - used[0].Ops
	limit := o.Budget.perOp(span)
	u := s.Unit
	slopeText := fmt.Sprintf("slope=%s/op", u.Human(slope))
	if !o.Budget.PerOp {
		slopeText += fmt.Sprintf(" (growth %s over %d ops)", u.Human(slope*float64(span)), span)
	}
	lateText := fmt.Sprintf("late slope %s/op", u.Human(late))
	switch {
	case slope <= limit:
		v.Outcome = outcome.Green
		v.Reason = fmt.Sprintf("GREEN %s %s <= budget %s, %s", name, slopeText, o.Budget, after)
		if late > limit {
			// Not RED: the later half alone is too noisy to convict on, but say so.
			v.Reason += fmt.Sprintf(" (%s is above budget: if growth began late, run longer)", lateText)
		}
	case late <= limit:
		v.Outcome = outcome.Green
		v.Reason = fmt.Sprintf("GREEN %s %s > budget %s but not persisting (%s within budget: a step, then a plateau), %s", name, slopeText, o.Budget, lateText, after)
	default:
		v.Outcome = outcome.Red
		v.Reason = fmt.Sprintf("RED %s %s > budget %s, persisting (%s), %s", name, slopeText, o.Budget, lateText, after)
	}
	return v
}

// theilSen is the median of the slopes between all pairs of points with
// distinct x. It ignores up to ~29% outliers, where a least-squares fit
// follows a single GC spike. O(n²) pairs: fine for the hundreds of batches
// a repro takes.
func theilSen(xs, ys []float64) (float64, bool) {
	slopes := make([]float64, 0, len(xs)*(len(xs)-1)/2)
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			if dx := xs[j] - xs[i]; dx != 0 {
				slopes = append(slopes, (ys[j]-ys[i])/dx)
			}
		}
	}
	if len(slopes) == 0 {
		return nan(), false
	}
	return median(slopes), true
}

func intercept(xs, ys []float64, slope float64) float64 {
	r := make([]float64, len(xs))
	for i := range xs {
		r[i] = ys[i] - slope*xs[i]
	}
	return median(r)
}

func median(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func nan() float64 { return math.NaN() }
