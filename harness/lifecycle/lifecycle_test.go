package lifecycle

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reproboard/reproboard/harness/meter"
	"github.com/reproboard/reproboard/harness/outcome"
)

// recorder is a testing.TB that records failures instead of failing the
// real test, so a helper's failure can itself be asserted.
type recorder struct {
	testing.TB // nil: calling anything not overridden panics, on purpose
	name       string
	errors     []string
	logs       []string
	attrs      map[string]string
	cleanups   []func()
}

type fatal struct{}

func newRecorder(name string) *recorder { return &recorder{name: name, attrs: map[string]string{}} }

func (r *recorder) Helper()          {}
func (r *recorder) Name() string     { return r.name }
func (r *recorder) Failed() bool     { return len(r.errors) > 0 }
func (r *recorder) Attr(k, v string) { r.attrs[k] = v }
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(fatal{})
}

// run calls f with the recorder as its TB, then the cleanups, last first;
// a Fatalf ends f as it would end a test.
func (r *recorder) run(f func(t testing.TB)) *recorder {
	func() {
		defer func() {
			if p := recover(); p != nil && p != (fatal{}) {
				panic(p)
			}
		}()
		f(r)
	}()
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	return r
}

func (r *recorder) errorText() string { return strings.Join(r.errors, "\n") }

var leaked [][]byte

func TestHeapGrowthCatchesLeak(t *testing.T) {
	leaked = nil
	defer func() { leaked = nil }()
	r := newRecorder("TestLeaky").run(func(tb testing.TB) {
		HeapGrowth(tb, 200, func(int) { leaked = append(leaked, make([]byte, 4096)) })
	})
	if !r.Failed() || !strings.Contains(r.errorText(), "RED heap_live slope=4") || !strings.Contains(r.errorText(), "> budget 1KiB/op, persisting") {
		t.Errorf("leaking fn: errors %q, want RED heap_live slope=4…KiB/op > budget 1KiB/op, persisting", r.errors)
	}
	if r.attrs[outcome.AttrOutcome] != "RED" {
		t.Errorf("outcome attr %q, want RED", r.attrs[outcome.AttrOutcome])
	}
	line := r.attrs[outcome.AttrMeasure]
	m, err := meter.ParseMeasure(line)
	if err != nil || m.Keyword != meter.LifecycleMeasure || m.Name != "TestLeaky" || m.Verdict != outcome.Red || len(m.Points) != 21 {
		t.Errorf("measure %q → %+v, %v", line, m, err)
	}
	if len(r.logs) != 1 || r.logs[0] != line {
		t.Errorf("logs %q, want the measure line once", r.logs)
	}
}

var sink []byte

func TestHeapGrowthPassesClean(t *testing.T) {
	var v meter.Verdict
	r := newRecorder("TestClean").run(func(tb testing.TB) {
		v = HeapGrowth(tb, 200, func(int) {
			sink = make([]byte, 4096) // allocates as much, keeps only the last
		})
	})
	if r.Failed() || v.Outcome != outcome.Green {
		t.Errorf("clean fn: %s; errors %q", v.Reason, r.errors)
	}
	if _, ok := r.attrs[outcome.AttrOutcome]; ok {
		t.Errorf("a passing helper marked the section %q; it must leave GREEN to the section", r.attrs[outcome.AttrOutcome])
	}
	if !strings.HasPrefix(r.attrs[outcome.AttrMeasure], "LIFECYCLE_MEASURE name=TestClean metric=heap_live unit=bytes warmup=20 samples=[0:") {
		t.Errorf("measure %q", r.attrs[outcome.AttrMeasure])
	}
}

func TestHeapGrowthTooFewCyclesIsInconclusive(t *testing.T) {
	r := newRecorder("TestShort").run(func(tb testing.TB) { HeapGrowth(tb, 20, func(int) {}) })
	if r.attrs[outcome.AttrOutcome] != "INCONCLUSIVE" || !strings.Contains(r.errorText(), "need 5") {
		t.Errorf("20 cycles: outcome %q errors %q, want INCONCLUSIVE needing 5 samples", r.attrs[outcome.AttrOutcome], r.errors)
	}
}

func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		opt  Option
		want string
	}{
		{Budget("4KiB/s"), "unknown rate"},
		{Budget("2/op"), "is a count"},
		{Every(0), "Every(0)"},
		{Timeout(0), "Timeout(0s)"},
	} {
		ran := false
		r := newRecorder("TestOpt").run(func(tb testing.TB) {
			HeapGrowth(tb, 100, func(int) { ran = true }, tc.opt)
		})
		if ran || !strings.Contains(r.errorText(), tc.want) {
			t.Errorf("errors %q (fn ran: %v), want a fatal naming %q", r.errors, ran, tc.want)
		}
	}
}

func TestNoGoroutineLeakCatchesLeak(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	start := time.Now()
	r := newRecorder("TestLeaksGoroutine").run(func(tb testing.TB) {
		NoGoroutineLeak(tb, Timeout(300*time.Millisecond))
		go leakyWorker(stop)
	})
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("wait took %s, want it bounded by the 300ms timeout", took)
	}
	msg := r.errorText()
	for _, want := range []string{
		"timed out after", "waiting for goroutines started during TestLeaksGoroutine to exit",
		"last saw: 1 still running: goroutine", "[chan receive] in github.com/reproboard/reproboard/harness/lifecycle.leakyWorker",
		"created by github.com/reproboard/reproboard/harness/lifecycle.TestNoGoroutineLeakCatchesLeak",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure lacks %q:\n%s", want, msg)
		}
	}
	if r.attrs[outcome.AttrOutcome] != "RED" {
		t.Errorf("outcome attr %q, want RED", r.attrs[outcome.AttrOutcome])
	}
}

func leakyWorker(stop chan struct{}) { <-stop }

func TestNoGoroutineLeakPassesWhenStopped(t *testing.T) {
	r := newRecorder("TestStopsGoroutine").run(func(tb testing.TB) {
		NoGoroutineLeak(tb)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() { <-stop })
		}
		close(stop)
		// Not waiting for wg: the helper's bounded wait covers goroutines
		// that are on their way out.
		tb.Cleanup(func() {})
	})
	if r.Failed() {
		t.Errorf("stopped goroutines reported: %s", r.errorText())
	}
}

func TestRegistryBounded(t *testing.T) {
	// A registry whose release forgets to delete: the hermes #3506 shape.
	leaky := map[string]bool{}
	r := newRecorder("TestLeakyRegistry").run(func(tb testing.TB) {
		RegistryBounded(tb, 500, func(i int) { leaky[fmt.Sprint("s", i)] = true }, func() int { return len(leaky) }, Timeout(100*time.Millisecond))
	})
	if !strings.Contains(r.errorText(), "waiting for registry to drain to size 0 after 500 churn cycles; last saw: size 500 (peak size 500 after cycle 499)") {
		t.Errorf("leaky registry: %q", r.errors)
	}
	if r.attrs[outcome.AttrOutcome] != "RED" {
		t.Errorf("outcome attr %q, want RED", r.attrs[outcome.AttrOutcome])
	}

	r = newRecorder("TestMax").run(func(tb testing.TB) {
		RegistryBounded(tb, 500, func(i int) { leaky[fmt.Sprint("m", i)] = true }, func() int { return len(leaky) }, Max(502))
	})
	if !strings.Contains(r.errorText(), "registry size 503 after churn cycle 2 exceeds max 502") {
		t.Errorf("max: %q", r.errors)
	}

	// A registry that is swept asynchronously drains within the wait.
	var mu sync.Mutex
	clean := map[int]bool{}
	r = newRecorder("TestCleanRegistry").run(func(tb testing.TB) {
		RegistryBounded(tb, 500, func(i int) {
			mu.Lock()
			clean[i] = true
			mu.Unlock()
			time.AfterFunc(20*time.Millisecond, func() { mu.Lock(); delete(clean, i); mu.Unlock() })
		}, func() int { mu.Lock(); defer mu.Unlock(); return len(clean) }, Max(500))
	})
	if r.Failed() {
		t.Errorf("clean registry: %s", r.errorText())
	}
}
