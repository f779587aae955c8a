package guards

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reproboard/reproboard/harness/script"
	"github.com/reproboard/reproboard/harness/section"
	"github.com/reproboard/reproboard/harness/selftest"
	"github.com/reproboard/reproboard/harness/target"
)

func resolveTarget(b *testing.B) *target.Target {
	tgt, err := script.Target()
	if err != nil {
		b.Fatal(err)
	}
	return tgt
}

// BenchmarkGuardSuite times the whole guard suite with sections in
// parallel and one at a time, in one run, and reports the ratio.
func BenchmarkGuardSuite(b *testing.B) {
	tgt := resolveTarget(b)
	selftest.Speedup(b, selftest.Child{Run: []string{"TestGuards"}, Env: []string{target.BinaryEnv + "=" + tgt.Path}}, 16)
}

func newSection(b *testing.B, tgt *target.Target, name string) *section.Section {
	r, err := section.DefaultRun()
	if err != nil {
		b.Fatal(err)
	}
	s, err := section.New(r, section.Config{Name: name, CacheVar: tgt.CacheVar, RuntimeVar: tgt.RuntimeVar})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func cli(b *testing.B, s *section.Section, tgt *target.Target, args ...string) {
	res := s.Run(section.Spec{Args: append([]string{tgt.Path}, args...), Timeout: time.Minute})
	if res.RC != 0 {
		b.Fatalf("%v: rc=%d\n%s", args, res.RC, res.Excerpt())
	}
}

// BenchmarkCLIListProjectsCold is a one-shot client with no daemon up: it
// pays for starting the ephemeral daemon. Each iteration gets a fresh
// section; stopping its daemon is not timed.
func BenchmarkCLIListProjectsCold(b *testing.B) {
	tgt := resolveTarget(b)
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		s := newSection(b, tgt, fmt.Sprintf("bench-cold-%d", i))
		b.StartTimer()
		cli(b, s, tgt, "cli", "list_projects", "{}")
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
}

// BenchmarkCLIListProjectsWarm is a one-shot client against a running
// permanent daemon.
func BenchmarkCLIListProjectsWarm(b *testing.B) {
	tgt := resolveTarget(b)
	s := newSection(b, tgt, "bench-warm")
	defer s.Close()
	cli(b, s, tgt, "daemon", "start")
	for b.Loop() {
		cli(b, s, tgt, "cli", "list_projects", "{}")
	}
}

// BenchmarkGuardSuiteParallelism runs the whole guard suite as a child
// at -test.parallel 2, 4 and 8, GUARDS_BENCH_RUNS times each (default
// 10), against demod as shipped: every failure is a false RED. It reports
// the median wall time and the false REDs per parallelism; the default
// in guards_test.go is chosen from these figures.
func BenchmarkGuardSuiteParallelism(b *testing.B) {
	tgt := resolveTarget(b)
	runs := 10
	if v, err := strconv.Atoi(os.Getenv("GUARDS_BENCH_RUNS")); err == nil && v > 0 {
		runs = v
	}
	levels := []int{2, 4, 8}
	times := map[int][]time.Duration{}
	reds := map[int][]string{}
	for range b.N {
		// Interleaved, so machine load drifts over all levels alike.
		for i := range runs {
			for _, p := range levels {
				child := selftest.Run(selftest.Child{Run: []string{"TestGuards"},
					Env:  []string{target.BinaryEnv + "=" + tgt.Path},
					Args: []string{fmt.Sprintf("-test.parallel=%d", p)}})
				times[p] = append(times[p], child.Duration)
				if child.Err != nil {
					reds[p] = append(reds[p], fmt.Sprintf("run %d: %s", i+1, failedSections(child.Output)))
				}
			}
		}
	}
	for _, p := range levels {
		ts := slices.Clone(times[p])
		slices.Sort(ts)
		med := ts[len(ts)/2]
		b.ReportMetric(med.Seconds(), fmt.Sprintf("s/suite@p%d", p))
		b.ReportMetric(float64(len(reds[p])), fmt.Sprintf("falseRED@p%d", p))
		b.Logf("parallel %d: median %.1fs (min %.1fs, max %.1fs) over %d runs; false REDs %d %v",
			p, med.Seconds(), ts[0].Seconds(), ts[len(ts)-1].Seconds(), len(ts), len(reds[p]), reds[p])
	}
}

var failedRE = regexp.MustCompile(`(?m)^\s*--- FAIL: (TestGuards/\S+/\S+)`)

func failedSections(out string) string {
	var names []string
	for _, m := range failedRE.FindAllStringSubmatch(out, -1) {
		names = append(names, m[1])
	}
	return strings.Join(names, ",")
}
