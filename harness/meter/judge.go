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
	// Runtime is the target's runtime (DetectRuntime); nil is Native. Its
	// floor and gains shape the footprint metrics (rss, uss, pss).
	Runtime *Runtime
}

// noiseZ is how many standard errors of the slope a growth must clear to
// be told from zero.
const noiseZ = 3

// LazyMinOps is the fewest ops after which the footprint of a lazily
// sized heap (V8, the JVM) can show a leak: before, its growth is mostly
// the heap sizing itself.
const LazyMinOps = 3200

// pageSize is the granularity of the footprint metrics.
const pageSize = 4096

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
	Ops       int // operations when the last sample was taken

	// Sensitivity is the smallest growth per op, in retained units, this
	// run could have told from zero: the largest of the sample noise
	// (noiseZ standard errors of the slope), the metric's granularity over
	// the span, and the runtime's floor spread over the ops before the
	// later half; NaN if not computed. LimitedBy names which.
	Sensitivity float64
	LimitedBy   string // "noise", "granularity" or "floor"
	// More is set when more operations could settle a verdict that is not
	// settled: a GREEN that could not see its budget, growth within the
	// noise, too few samples. NeedOps estimates how many (0: unknown).
	More    bool
	NeedOps int
	Runtime Runtime
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
	rt := Native
	if o.Runtime != nil {
		rt = *o.Runtime
	}
	v := Verdict{Metric: s.Metric, Unit: s.Unit, Budget: o.Budget, Warmup: o.Warmup,
		Slope: nan(), LateSlope: nan(), Intercept: nan(), Sensitivity: nan(), Runtime: rt}
	if n := len(s.Points); n > 0 {
		v.Ops = s.Points[n-1].Ops
	}
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
		v.More = true
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
	gmin, gmax := rt.gains(s.Metric)
	lazy := rt.Lazy && (s.Metric == RSS || s.Metric == USS || s.Metric == PSS)

	// Sensitivity, in retained units per op. The noise is read from the
	// successive differences about the fit (robust to a step, which moves
	// one difference, and to a slow curve), and stated as the standard
	// error of a slope over these samples.
	var diffs []float64
	for i := 1; i < len(xs); i++ {
		diffs = append(diffs, math.Abs(ys[i]-ys[i-1]-slope*(xs[i]-xs[i-1])))
	}
	sigma := 1.4826 * median(diffs) / math.Sqrt2
	mean := 0.0
	for _, x := range xs {
		mean += x / float64(len(xs))
	}
	sxx := 0.0
	for _, x := range xs {
		sxx += (x - mean) * (x - mean)
	}
	noise := noiseZ * sigma / math.Sqrt(sxx) // raw units per op
	gran := 1.0
	if s.Metric == RSS || s.Metric == USS || s.Metric == PSS {
		gran = pageSize
	}
	terms := map[string]float64{"noise": noise / gmin, "granularity": gran / float64(span) / gmin}
	if f := rt.floor(s.Metric); f > 0 {
		terms["floor"] = f / xs[h]
	}
	v.Sensitivity, v.LimitedBy = 0, "noise"
	for _, k := range []string{"noise", "granularity", "floor"} {
		if t, ok := terms[k]; ok && t > v.Sensitivity {
			v.Sensitivity, v.LimitedBy = t, k
		}
	}
	if limit > 0 && v.Sensitivity > limit {
		v.NeedOps = needOps(v, terms, limit, rt)
	}

	slopeText := fmt.Sprintf("slope=%s/op", u.Human(slope))
	if !o.Budget.PerOp {
		slopeText += fmt.Sprintf(" (growth %s over %d ops)", u.Human(slope*float64(span)), span)
	}
	retained := ""
	switch {
	case gmin != 1 && gmin == gmax:
		retained = fmt.Sprintf(" (%s/op retained: a %s heap is %sx its live data)", u.Human(slope/gmin), rt, trimNumber(gmin))
	case gmin != gmax:
		retained = fmt.Sprintf(" (%s to %s/op retained: %s heaps are %s to %sx their live data)", u.Human(slope/gmax), u.Human(slope/gmin), rt.Name, trimNumber(gmin), trimNumber(gmax))
	}
	lateText := fmt.Sprintf("late slope %s/op", u.Human(late))
	sensText := fmt.Sprintf("sensitivity %s/op (%s)", u.Human(v.Sensitivity), v.LimitedBy)
	tail := fmt.Sprintf("%s, %s, %s", sensText, after, rt)
	switch {
	case slope/gmax > limit && late/gmax > limit && slope > noise && lazy && v.Ops < LazyMinOps:
		v.Outcome, v.More = outcome.Inconclusive, true
		v.Reason = fmt.Sprintf("INCONCLUSIVE %s %s > budget %s%s, persisting (%s), but a %s heap is sized lazily over its first thousands of ops: %s convicts it only after %d ops; %s; %s", name, slopeText, o.Budget, retained, lateText, rt.Name, s.Metric, LazyMinOps, rt.Advice, tail)
	case slope/gmax > limit && late/gmax > limit && slope > noise && terms["floor"] > 0 && slope/gmin <= terms["floor"]:
		// Below its floor a garbage-collected heap's footprint moves by
		// its GC timing alone (a heap filling to its goal, a scavenger
		// returning pages): growth that has not passed the floor convicts
		// nothing, however steady.
		v.Outcome, v.More = outcome.Inconclusive, true
		v.Reason = fmt.Sprintf("INCONCLUSIVE %s %s > budget %s%s, persisting (%s), but a %s footprint moves by up to its heap floor without retaining anything, and this growth has not passed it: %s. %s", name, slopeText, o.Budget, retained, lateText, rt.Name, tail, blindAdvice(v, rt, limit))
	case slope/gmax > limit && late/gmax > limit && slope > noise:
		v.Outcome = outcome.Red
		v.Reason = fmt.Sprintf("RED %s %s > budget %s%s, persisting (%s), %s", name, slopeText, o.Budget, retained, lateText, tail)
	case slope/gmax > limit && late/gmax > limit:
		v.Outcome, v.More = outcome.Inconclusive, true
		v.Reason = fmt.Sprintf("INCONCLUSIVE %s %s > budget %s%s but within the noise (%s/op), so this run could not have seen %s: %s. %s", name, slopeText, o.Budget, retained, u.Human(noise), o.Budget, tail, blindAdvice(v, rt, limit))
	case slope/gmin > limit && late/gmin > limit:
		// Between the runtime's bounds: what is retained may be either
		// side. More ops may settle it (a lazily sized heap stops growing).
		v.Outcome, v.More = outcome.Inconclusive, true
		v.Reason = fmt.Sprintf("INCONCLUSIVE %s %s%s: the budget %s is within what the footprint can say; %s; %s", name, slopeText, retained, o.Budget, rt.Advice, tail)
	case v.Sensitivity > limit:
		v.Outcome, v.More = outcome.Inconclusive, true
		v.Reason = fmt.Sprintf("INCONCLUSIVE %s %s <= budget %s%s, but this run could not have seen %s: %s. %s", name, slopeText, o.Budget, retained, o.Budget, tail, blindAdvice(v, rt, limit))
	case slope/gmin <= limit:
		v.Outcome = outcome.Green
		v.Reason = fmt.Sprintf("GREEN %s %s <= budget %s%s, %s", name, slopeText, o.Budget, retained, tail)
		if late/gmin > limit {
			// Not RED: the later half alone is too noisy to convict on, but say so.
			v.Reason += fmt.Sprintf(" (%s is above budget: if growth began late, run longer)", lateText)
		}
	default:
		v.Outcome = outcome.Green
		v.Reason = fmt.Sprintf("GREEN %s %s > budget %s%s but not persisting (%s within budget: a step, then a plateau), %s", name, slopeText, o.Budget, retained, lateText, tail)
	}
	return v
}

// needOps estimates the operations that bring the sensitivity down to
// limit, with the warmup the same share of the run: the floor spreads over
// the ops before the later half, the noise term falls as span^1.5.
func needOps(v Verdict, terms map[string]float64, limit float64, rt Runtime) int {
	if v.Ops <= 0 {
		return 0
	}
	n := float64(v.Ops)
	for k, t := range terms {
		if t <= limit {
			continue
		}
		var want float64
		switch k {
		case "floor":
			want = n * t / limit
		case "noise":
			want = n * math.Pow(t/limit, 2.0/3)
		default:
			want = n * t / limit
		}
		n = math.Max(n, want)
	}
	return int(math.Ceil(n/100) * 100)
}

// blindAdvice says what would let a run see its budget.
func blindAdvice(v Verdict, rt Runtime, limit float64) string {
	u := v.Unit
	need := "more"
	if v.NeedOps > 0 {
		need = fmt.Sprintf(">= %d", v.NeedOps)
	}
	switch v.LimitedBy {
	case "floor":
		return fmt.Sprintf("A leak of %s/op would not show in %d ops of this program: %s; run %s ops (-max-ops, -max-time or -n) or %s", u.Human(limit), v.Ops, rt.describeFloor(), need, rt.Advice)
	case "granularity":
		return fmt.Sprintf("A leak of %s/op would move %s by less than a page in %d ops; run %s ops (-max-ops, -max-time or -n)", u.Human(limit), v.Metric, v.Ops, need)
	}
	return fmt.Sprintf("A leak of %s/op would not stand out of this series' noise in %d ops; run %s ops (-max-ops, -max-time or -n) or larger batches", u.Human(limit), v.Ops, need)
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
