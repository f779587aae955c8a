package lifecycle

import (
	"errors"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/reproboard/reproboard/harness/meter"
	"github.com/reproboard/reproboard/harness/outcome"
)

// HeapMetric names the live heap in LIFECYCLE_MEASURE lines.
const HeapMetric meter.Metric = "heap_live"

// HeapGrowth runs fn cycles times and fails t if the live heap grows by
// more than the budget (default 1KiB/op) per cycle. Every k cycles (default
// 10) it forces a GC and reads the live heap from runtime/metrics, then
// judges the series with meter.Judge: a Theil–Sen slope after warmup that
// must exceed the budget and keep exceeding it in the later half. It logs a
// LIFECYCLE_MEASURE line, records it as the section's measure, and returns
// the verdict.
//
// The live heap is the whole process's: run it in a test that is not
// parallel with other tests that allocate and keep.
func HeapGrowth(t testing.TB, cycles int, fn func(i int), opts ...Option) meter.Verdict {
	t.Helper()
	c := configure(t, opts)
	warmup := c.warmup
	if warmup < 0 {
		warmup = max(c.every, cycles/10)
	}
	s := meter.Series{Metric: HeapMetric, Unit: meter.Bytes}
	s.Add(0, liveHeap())
	for i := range cycles {
		fn(i)
		if done := i + 1; done%c.every == 0 || done == cycles {
			s.Add(done, liveHeap())
		}
	}
	v := meter.Judge(s, meter.Options{Budget: c.budget, Warmup: warmup})
	m := meter.NewMeasure(s, v)
	m.Keyword, m.Name = meter.LifecycleMeasure, t.Name()
	line := meter.FormatMeasure(m)
	t.Logf("%s", line)
	t.Attr(outcome.AttrMeasure, line)
	if v.Outcome != outcome.Green {
		outcome.Mark(t, v.Outcome, v.Reason)
		t.Errorf("HeapGrowth over %d cycles: %s", cycles, v.Reason)
	}
	return v
}

// liveHeap forces a full GC so the reading is the heap still reachable,
// not garbage waiting for the next cycle.
func liveHeap() meter.Reading {
	runtime.GC()
	for _, name := range []string{"/gc/heap/live:bytes", "/memory/classes/heap/objects:bytes"} {
		s := []metrics.Sample{{Name: name}}
		metrics.Read(s)
		if s[0].Value.Kind() == metrics.KindUint64 {
			return meter.Reading{Value: float64(s[0].Value.Uint64()), Unit: meter.Bytes}
		}
	}
	return meter.Reading{Unit: meter.Bytes, Err: errors.New("runtime/metrics has neither /gc/heap/live:bytes nor /memory/classes/heap/objects:bytes")}
}
