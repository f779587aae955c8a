// Package guards runs the gating guard scripts of testdata/guards against
// the target that boards.yaml (or REPROBOARD_TARGET) names.
package guards

import (
	"flag"
	"os"
	"strconv"
	"testing"

	"github.com/reproboard/reproboard/harness/script"
	"github.com/reproboard/reproboard/harness/section"
)

// defaultParallel is how many guard sections run at once unless
// -test.parallel says otherwise. Guard scripts mostly wait, so it need not
// be the CPU count; the figure comes from BenchmarkGuardSuiteParallelism
// (README, Figures).
const defaultParallel = 8

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(defaultParallel))
	}
	os.Exit(section.Main(m))
}

// TestGuards runs every script under testdata/guards, each in its own
// section: TestGuards/daemon/crash-recovery is testdata/guards/daemon/crash-recovery.txtar.
func TestGuards(t *testing.T) {
	script.Run(t, script.Params{Dir: "../testdata/guards"})
}
