// Package guards runs the gating guard scripts of testdata/guards against
// the target that boards.yaml (or REPROBOARD_TARGET) names.
package guards

import (
	"os"
	"testing"

	"github.com/reproboard/reproboard/harness/script"
	"github.com/reproboard/reproboard/harness/section"
)

func TestMain(m *testing.M) { os.Exit(section.Main(m)) }

// TestGuards runs every script under testdata/guards, each in its own
// section: TestGuards/daemon/crash-recovery is testdata/guards/daemon/crash-recovery.txtar.
func TestGuards(t *testing.T) {
	script.Run(t, script.Params{Dir: "../testdata/guards"})
}
