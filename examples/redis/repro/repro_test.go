// Package repro runs the leak repros of ../testdata/repro on the
// non-gating redis-leaks board.
package repro

import (
	"os"
	"testing"

	"github.com/reproboard/reproboard/harness/script"
	"github.com/reproboard/reproboard/harness/section"
)

func TestMain(m *testing.M) { os.Exit(section.Main(m)) }

func TestRepro(t *testing.T) {
	script.Run(t, script.Params{Dir: "../testdata/repro"})
}
