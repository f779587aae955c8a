// Package meter measures the resources of a process and judges a series of
// measurements: the reproduction tier of memory bugs.
//
// Two readings of RSS, before and after, are not a repro: a small fixture
// moves RSS by nothing and the test stays green on a leaking build. meter
// instead samples a process after every batch of operations (Sample,
// Recorder), discards a warmup, and judges the rest by a robust slope
// against a budget in human units (ParseBudget, Judge). It says
// INCONCLUSIVE, never GREEN, when a metric could not be read or the
// operation failed, and leaves a machine-readable line (FormatMeasure) and
// the samples and a chart (WriteArtifacts) for the board.
//
// A repro loop:
//
//	rec := meter.NewRecorder(&meter.Target{PID: pid}, meter.USS, meter.FileMetric("data/*.db-wal"))
//	for ops := 0; ops <= total; ops += batch {
//		runBatch()
//		rec.Record(ctx, ops)
//	}
//	for _, s := range rec.Series() {
//		v := meter.Judge(s, meter.Options{Budget: budget, Warmup: 40})
//		arts, err := meter.WriteArtifacts(dir, s, v)
//		line := meter.FormatMeasure(meter.NewMeasure(s, v))
//		...
//	}
//
// Sampling reads Linux /proc and works on Linux only.
package meter
