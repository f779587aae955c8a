package meter

import "context"

// Recorder samples one target after every batch and keeps a series per
// metric, so a repro loop is: run a batch, Record, repeat, then Judge each
// series and write its artefacts.
type Recorder struct {
	target  *Target
	metrics []Metric
	series  []Series
}

// NewRecorder records the given metrics of t.
func NewRecorder(t *Target, metrics ...Metric) *Recorder {
	r := &Recorder{target: t, metrics: metrics}
	for _, m := range metrics {
		r.series = append(r.series, Series{Metric: m, Unit: m.Unit()})
	}
	return r
}

// Record samples every metric after ops operations and appends the
// readings, unreadable ones included, to their series.
func (r *Recorder) Record(ctx context.Context, ops int) Snapshot {
	snap := Sample(ctx, r.target, r.metrics)
	for i, m := range r.metrics {
		r.series[i].Add(ops, snap.Readings[m])
	}
	return snap
}

// Series returns the series recorded so far, in the order of the metrics.
func (r *Recorder) Series() []Series {
	out := make([]Series, len(r.series))
	for i, s := range r.series {
		s.Points = append([]Point(nil), s.Points...)
		out[i] = s
	}
	return out
}

// Len is the number of samples taken of each metric.
func (r *Recorder) Len() int {
	if len(r.series) == 0 {
		return 0
	}
	return len(r.series[0].Points)
}

// Thin keeps every other sample (the first, third, …) of every series, so
// a long run (a soak) stays quick to judge; the caller then samples half
// as often, which keeps the spacing even.
func (r *Recorder) Thin() {
	for i := range r.series {
		pts := r.series[i].Points
		kept := pts[:0]
		for j := 0; j < len(pts); j += 2 {
			kept = append(kept, pts[j])
		}
		r.series[i].Points = kept
	}
}
