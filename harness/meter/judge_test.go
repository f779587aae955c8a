package meter

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/reproboard/reproboard/harness/outcome"
)

const (
	kib = 1 << 10
	mib = 1 << 20
)

// synth builds a series sampled every batch ops up to total, value f(ops)
// plus uniform jitter of ±jitter bytes from a seeded source.
func synth(total, batch int, jitter float64, seed uint64, f func(ops int) float64) Series {
	r := rand.New(rand.NewPCG(seed, seed))
	s := Series{Metric: USS, Unit: Bytes}
	for ops := 0; ops <= total; ops += batch {
		s.Points = append(s.Points, Point{Ops: ops, Value: f(ops) + (r.Float64()*2-1)*jitter})
	}
	return s
}

func TestJudgeSynthetic(t *testing.T) {
	base := 30.0 * mib
	budget := MustParseBudget("4KiB/op")
	for _, tc := range []struct {
		name string
		s    Series
		want outcome.Outcome
		says string
	}{
		{"linear growth above budget", synth(400, 10, 200*kib, 1, func(o int) float64 { return base + 10*kib*float64(o) }), outcome.Red, "persisting"},
		{"flat with allocator jitter", synth(400, 10, 200*kib, 2, func(int) float64 { return base }), outcome.Green, "<= budget"},
		{"growth below budget", synth(400, 10, 50*kib, 3, func(o int) float64 { return base + 2*kib*float64(o) }), outcome.Green, "<= budget"},
		{"step then plateau", synth(400, 10, 50*kib, 4, func(o int) float64 {
			if o >= 200 {
				return base + 8*mib
			}
			return base
		}), outcome.Green, "not persisting"},
		{"cache fills then stays", synth(400, 10, 50*kib, 5, func(o int) float64 {
			return base + 16*kib*float64(min(o, 180))
		}), outcome.Green, "not persisting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.s, Options{Budget: budget, Warmup: 40})
			if v.Outcome != tc.want || !strings.Contains(v.Reason, tc.says) {
				t.Errorf("%s, want %s saying %q", v.Reason, tc.want, tc.says)
			}
			if !strings.HasPrefix(v.Reason, string(v.Outcome)+" uss slope=") || !strings.Contains(v.Reason, "37 samples after 40 warmup ops") {
				t.Errorf("reason %q lacks outcome, slope or sample count", v.Reason)
			}
		})
	}
}

// Flat series are never RED across many seeds, not just a lucky one; a
// short one may be too noisy to see the budget (INCONCLUSIVE, saying so),
// a long one is GREEN.
func TestJudgeFlatNoiseManySeeds(t *testing.T) {
	for seed := range uint64(200) {
		s := synth(150, 10, 200*kib, seed, func(int) float64 { return 30 * mib })
		v := Judge(s, Options{Budget: MustParseBudget("4KiB/op"), Warmup: 10})
		if v.Outcome == outcome.Red || v.Outcome == outcome.Inconclusive && !strings.Contains(v.Reason, "could not have seen 4KiB/op") {
			t.Fatalf("seed %d: %s", seed, v.Reason)
		}
		s = synth(600, 10, 200*kib, seed, func(int) float64 { return 30 * mib })
		if v := Judge(s, Options{Budget: MustParseBudget("4KiB/op"), Warmup: 40}); v.Outcome != outcome.Green {
			t.Fatalf("seed %d, 600 ops: %s", seed, v.Reason)
		}
	}
}

func TestJudgeOutliersDoNotFlip(t *testing.T) {
	flat := synth(400, 10, 20*kib, 7, func(int) float64 { return 30 * mib })
	leak := synth(400, 10, 20*kib, 8, func(o int) float64 { return 30*mib + 8*kib*float64(o) })
	// GC spikes and dips on a few samples, late in the run where they hurt most.
	for _, i := range []int{30, 34, 38} {
		flat.Points[i].Value += 64 * mib
		leak.Points[i].Value -= 64 * mib
	}
	b := Options{Budget: MustParseBudget("4KiB/op"), Warmup: 40}
	if v := Judge(flat, b); v.Outcome != outcome.Green {
		t.Errorf("flat with 3 spikes: %s", v.Reason)
	}
	if v := Judge(leak, b); v.Outcome != outcome.Red {
		t.Errorf("leak with 3 dips: %s", v.Reason)
	}
}

// The lesson of the first #581 repro: "end <= 3.0 x value at warmup" calls a 10 KiB/op
// leak on a 30 MiB process GREEN after 150 ops (factor 1.05); the slope
// against a budget calls it RED.
func TestTwoPointFactorRuleMissesSmallLeak(t *testing.T) {
	s := synth(150, 10, 200*kib, 11, func(o int) float64 { return 30*mib + 10*kib*float64(o) })
	var atWarmup, end float64
	for _, p := range s.Points {
		if p.Ops == 10 {
			atWarmup = p.Value
		}
		end = p.Value
	}
	if factorRuleGreen := end <= 3.0*atWarmup; !factorRuleGreen {
		t.Fatalf("factor rule called it RED (factor %.2f); the two-point rule's blind spot no longer shows here", end/atWarmup)
	}
	v := Judge(s, Options{Budget: MustParseBudget("4KiB/op"), Warmup: 10})
	if v.Outcome != outcome.Red {
		t.Errorf("factor %.2f passes the two-point rule, and Judge says %s; want RED", end/atWarmup, v.Reason)
	}
	t.Logf("factor rule: %.3fx <= 3.0 GREEN; Judge: %s", end/atWarmup, v.Reason)
}

func TestJudgeInconclusive(t *testing.T) {
	leak := func() Series {
		return synth(200, 10, 0, 1, func(o int) float64 { return 30*mib + 10*kib*float64(o) })
	}
	b := MustParseBudget("4KiB/op")
	unreadable := leak()
	unreadable.Points[15].Err = errors.New("process 42 is not running")
	warmupUnreadable := leak()
	warmupUnreadable.Points[1].Err = errors.New("not yet started")

	for _, tc := range []struct {
		name string
		s    Series
		o    Options
		want string
	}{
		{"unreadable sample", unreadable, Options{Budget: b, Warmup: 20}, "unreadable at 150 ops: process 42 is not running"},
		{"too few samples", leak(), Options{Budget: b, Warmup: 170}, "only 4 samples after 170 warmup ops, need 5"},
		{"operation failed", leak(), Options{Budget: b, OpErr: errors.New("tools/call: EOF")}, "the operation failed: tools/call: EOF"},
		{"no budget", leak(), Options{}, "no budget"},
		{"unit mismatch", leak(), Options{Budget: MustParseBudget("2/op")}, "budget 2/op is in count"},
		{"one op count", Series{Metric: USS, Unit: Bytes, Points: []Point{{5, 1, nil}, {5, 2, nil}, {5, 3, nil}, {5, 4, nil}, {5, 5, nil}}}, Options{Budget: b}, "same op count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.s, tc.o)
			if v.Outcome != outcome.Inconclusive || !strings.Contains(v.Reason, tc.want) {
				t.Errorf("%s; want INCONCLUSIVE containing %q", v.Reason, tc.want)
			}
		})
	}
	// An unreadable sample inside the warmup is discarded with it.
	if v := Judge(warmupUnreadable, Options{Budget: b, Warmup: 20}); v.Outcome != outcome.Red {
		t.Errorf("unreadable warmup sample: %s, want RED", v.Reason)
	}
}

func TestJudgeTotalBudget(t *testing.T) {
	// 10 KiB/op over the 360 measured ops is 3.5 MiB.
	s := synth(400, 10, 0, 1, func(o int) float64 { return 30*mib + 10*kib*float64(o) })
	if v := Judge(s, Options{Budget: MustParseBudget("8MiB"), Warmup: 40}); v.Outcome != outcome.Green || !strings.Contains(v.Reason, "growth 3.52MiB over 360 ops") {
		t.Errorf("8MiB total: %s", v.Reason)
	}
	if v := Judge(s, Options{Budget: MustParseBudget("2MiB"), Warmup: 40}); v.Outcome != outcome.Red {
		t.Errorf("2MiB total: %s", v.Reason)
	}
}

func TestJudgeReasonFormat(t *testing.T) {
	s := synth(160, 10, 0, 1, func(o int) float64 { return 30*mib + 5.1*kib*float64(o) })
	v := Judge(s, Options{Budget: MustParseBudget("4KiB/op"), Warmup: 40})
	want := "RED uss slope=5.1KiB/op > budget 4KiB/op, persisting (late slope 5.1KiB/op), sensitivity 34.1B/op (granularity), 13 samples after 40 warmup ops, native"
	if v.Reason != want {
		t.Errorf("reason\n got %s\nwant %s", v.Reason, want)
	}
	if v.Used != 13 || v.Slope < 5.09*kib || v.Slope > 5.11*kib {
		t.Errorf("used=%d slope=%v", v.Used, v.Slope)
	}
}

func TestFDCountSeries(t *testing.T) {
	s := Series{Metric: FDs, Unit: Count}
	for ops := 0; ops <= 100; ops += 10 {
		s.Points = append(s.Points, Point{Ops: ops, Value: 12 + float64(ops)/2})
	}
	v := Judge(s, Options{Budget: MustParseBudget("0.1/op"), Warmup: 10})
	if v.Outcome != outcome.Red || !strings.Contains(v.Reason, "slope=0.5/op > budget 0.1/op") {
		t.Errorf("%s", v.Reason)
	}
}

func TestJudgeNaNValueIsUnreadable(t *testing.T) {
	s := synth(100, 10, 0, 1, func(int) float64 { return 1 })
	s.Points[6].Value = nan()
	if v := Judge(s, Options{Budget: MustParseBudget("4KiB/op")}); v.Outcome != outcome.Inconclusive {
		t.Errorf("NaN sample: %s", v.Reason)
	}
}

// BenchmarkJudge is the cost of judging a 200-batch series.
func BenchmarkJudge(b *testing.B) {
	s := synth(2000, 10, 200*kib, 1, func(o int) float64 { return 30*mib + 5*kib*float64(o) })
	o := Options{Budget: MustParseBudget("4KiB/op"), Warmup: 100}
	for b.Loop() {
		Judge(s, o)
	}
}
