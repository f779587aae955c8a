package section

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/reproboard/reproboard/harness/backstop"
)

// benchRun is a run at exactly level under a base of its own, or nil when
// the machine does not offer it.
func benchRun(b *testing.B, level backstop.Isolation) *backstop.Run {
	base, err := os.MkdirTemp("/tmp", "rbbench")
	if err != nil {
		b.Fatal(err)
	}
	r, _, err := backstop.StartRunWith(base, level)
	if err != nil {
		b.Fatal(err)
	}
	Supervise(r, level)
	b.Cleanup(func() {
		r.Close(false)
		os.RemoveAll(base)
	})
	if r.Isolation != level {
		b.Skipf("%s isolation is not available here (got %s)", level, r.Isolation)
	}
	return r
}

var levels = []backstop.Isolation{backstop.IsolationCgroup, backstop.IsolationSubreaper, backstop.IsolationMarker}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkStartCost is what a section adds to starting a command, per
// isolation level: `true` through plain os/exec and through Section.Run,
// alternated 200 times in one run, medians compared.
func BenchmarkStartCost(b *testing.B) {
	for _, level := range levels {
		b.Run(string(level), func(b *testing.B) {
			s, err := New(benchRun(b, level), Config{Name: "bench-start"})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for b.Loop() {
				var plain, sec []time.Duration
				for range 200 {
					t0 := time.Now()
					if err := exec.Command("true").Run(); err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					if res := s.Run(Spec{Args: []string{"true"}}); res.RC != 0 {
						b.Fatal(res.Output)
					}
					plain, sec = append(plain, t1.Sub(t0)), append(sec, time.Since(t1))
				}
				mp, ms := median(plain), median(sec)
				b.ReportMetric(float64(mp.Microseconds()), "µs-exec")
				b.ReportMetric(float64(ms.Microseconds()), "µs-section")
				b.ReportMetric(float64((ms - mp).Microseconds()), "µs-added")
			}
		})
	}
}

// BenchmarkSectionEnd is the cost of ending a section with 0 and with 50
// left-over processes (orphans of one command, detached from it), per
// isolation level: the median of 5 ends.
func BenchmarkSectionEnd(b *testing.B) {
	for _, level := range levels {
		for _, n := range []int{0, 50} {
			b.Run(string(level)+"/"+map[int]string{0: "0-leftovers", 50: "50-leftovers"}[n], func(b *testing.B) {
				r := benchRun(b, level)
				for b.Loop() {
					var ends []time.Duration
					for range 5 {
						s, err := New(r, Config{Name: "bench-end"})
						if err != nil {
							b.Fatal(err)
						}
						if n > 0 {
							res := s.Run(Spec{Args: []string{"sh", "-c", "for i in $(seq 50); do sleep 300 </dev/null >/dev/null 2>&1 & done"}})
							if res.RC != 0 {
								b.Fatal(res.Output)
							}
						}
						t0 := time.Now()
						end := s.Close()
						ends = append(ends, time.Since(t0))
						if got := len(end.Backstop.Stopped()); got != n || len(end.Backstop.Survivors) > 0 {
							b.Fatalf("stopped %d of %d left-overs under %s:\n%s", got, n, level, end.Backstop)
						}
					}
					b.ReportMetric(float64(median(ends).Milliseconds()), "ms-end")
				}
			})
		}
	}
}

// BenchmarkBackstopSweep is the cost of one marker sweep of /proc with 100
// extra processes on the machine.
func BenchmarkBackstopSweep(b *testing.B) {
	r, err := DefaultRun()
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(r, Config{Name: "bench-sweep"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 100; i++ {
		if _, err := s.Start("sleeper", Spec{Args: []string{"sleep", "300"}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		procs, err := backstop.WithMarker(s.Marker)
		if err != nil || len(procs) != 100 {
			b.Fatalf("found %d marked processes (%v)", len(procs), err)
		}
	}
}
