package script

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSleepScripts is the subject of BenchmarkScriptsParallel: it runs
// only in the benchmark's child process.
func TestSleepScripts(t *testing.T) {
	dir := os.Getenv("BENCH_SCRIPTS_DIR")
	if dir == "" {
		t.Skip("run by BenchmarkScriptsParallel")
	}
	Run(t, Params{Dir: dir, NoTarget: true})
}

// BenchmarkScriptsParallel times a directory of 8 scripts that each sleep
// 2 s, with sections in parallel and then one at a time, in one run, and
// reports the ratio.
func BenchmarkScriptsParallel(b *testing.B) {
	dir := b.TempDir()
	for i := range 8 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("sleep%d.txtar", i)), []byte("sleep 2s\n"), 0o644)
	}
	wall := func(parallel int) time.Duration {
		start := time.Now()
		cmd := exec.Command(os.Args[0], "-test.run=^TestSleepScripts$", "-test.count=1", fmt.Sprintf("-test.parallel=%d", parallel))
		cmd.Env = append(os.Environ(), "BENCH_SCRIPTS_DIR="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("scripts failed: %v\n%s", err, out)
		}
		return time.Since(start)
	}
	for b.Loop() {
		par, seq := wall(8), wall(1)
		b.ReportMetric(par.Seconds(), "s-parallel")
		b.ReportMetric(seq.Seconds(), "s-sequential")
		b.ReportMetric(seq.Seconds()/par.Seconds(), "x-speedup")
	}
}
