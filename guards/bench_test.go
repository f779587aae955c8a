package guards

import (
	"fmt"
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
