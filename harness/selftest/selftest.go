// Package selftest runs one test of the running test binary in a child
// process and reads what it reported. Tests of a harness need it: a script
// that is meant to fail, a guard run against a target broken on purpose, a
// benchmark timing a whole suite — each runs where its failure cannot fail
// the parent, which then checks that it failed, and how.
package selftest

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reproboard/reproboard/harness/outcome"
)

// Child is one run of this test binary.
type Child struct {
	Run  []string // the test and subtest names, matched exactly
	Env  []string // KEY=VALUE added to this process's environment
	Args []string // more test flags, e.g. -test.parallel=8
}

// Result is what the child did.
type Result struct {
	Output   string // stdout and stderr, -test.v
	Err      error  // nil when every test passed
	Duration time.Duration
	MaxRSS   int64 // the child's peak resident set, bytes (getrusage via wait4)
}

// Pattern is a -test.run pattern matching exactly the named test and
// subtests: Pattern("TestGuards", "daemon", "a.b") is ^TestGuards$/^daemon$/^a\.b$.
func Pattern(names ...string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = "^" + regexp.QuoteMeta(n) + "$"
	}
	return strings.Join(parts, "/")
}

// Run runs the child to its end.
func Run(c Child) Result {
	args := append([]string{"-test.run=" + Pattern(c.Run...), "-test.v", "-test.count=1"}, c.Args...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(childEnv(), c.Env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	r := Result{Output: string(out), Err: err, Duration: time.Since(start)}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.MaxRSS = ru.Maxrss << 10
		}
	}
	return r
}

// childEnv is this process's environment without the board's listing and
// shard requests: the parent was selected to run, so its child runs in
// full. A child that inherited REPROBOARD_SHARD would skip the very test
// it was started for, and the parent would read that as "stayed GREEN".
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == outcome.EnvShard || name == outcome.EnvDryRun {
			continue
		}
		env = append(env, kv)
	}
	return env
}

var attrLine = regexp.MustCompile(`(?m)^=== ATTR  (\S+) (\S+) (.*)$`)

// Attr is the last value the child's test recorded for key with t.Attr,
// or "" when it recorded none.
func (r Result) Attr(test, key string) string {
	value := ""
	for _, m := range attrLine.FindAllStringSubmatch(r.Output, -1) {
		if m[1] == test && m[2] == key {
			value = m[3]
		}
	}
	return value
}

var elapsed = regexp.MustCompile(`--- (?:PASS|FAIL|SKIP): (\S+) \((\d+\.\d+)s\)`)

// Elapsed is how long the child's test took by its own report.
func (r Result) Elapsed(test string) (time.Duration, bool) {
	for _, m := range elapsed.FindAllStringSubmatch(r.Output, -1) {
		if m[1] == test {
			d, err := time.ParseDuration(m[2] + "s")
			return d, err == nil
		}
	}
	return 0, false
}

// Speedup runs the child with -test.parallel=n, then with 1, and reports
// both wall times and their ratio as b's metrics: one run of each, back to
// back, so the ratio holds on a noisy machine.
func Speedup(b *testing.B, c Child, n int) {
	b.Helper()
	wall := func(parallel int) time.Duration {
		run := c
		run.Args = append(append([]string(nil), c.Args...), fmt.Sprintf("-test.parallel=%d", parallel))
		r := Run(run)
		if r.Err != nil {
			b.Fatalf("%s failed: %v\n%s", Pattern(c.Run...), r.Err, r.Output)
		}
		return r.Duration
	}
	for b.Loop() {
		par, seq := wall(n), wall(1)
		b.ReportMetric(par.Seconds(), "s-parallel")
		b.ReportMetric(seq.Seconds(), "s-sequential")
		b.ReportMetric(seq.Seconds()/par.Seconds(), "x-speedup")
	}
}
