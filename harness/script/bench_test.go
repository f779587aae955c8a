package script

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/reproboard/reproboard/harness/selftest"
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
	selftest.Speedup(b, selftest.Child{Run: []string{"TestSleepScripts"}, Env: []string{"BENCH_SCRIPTS_DIR=" + dir}}, 8)
}
