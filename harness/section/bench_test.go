package section

import (
	"os/exec"
	"testing"

	"github.com/reproboard/reproboard/harness/backstop"
)

// BenchmarkRunPlainExec is the baseline for BenchmarkRunSection: the same
// command through os/exec alone.
func BenchmarkRunPlainExec(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunSection starts a command through a section: environment,
// process group, start-time record, bounded capture.
func BenchmarkRunSection(b *testing.B) {
	r, err := DefaultRun()
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(r, Config{Name: "bench-run"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		if res := s.Run(Spec{Args: []string{"true"}}); res.RC != 0 {
			b.Fatal(res.Output)
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
