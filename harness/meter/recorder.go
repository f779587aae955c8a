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
