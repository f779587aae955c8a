// Package repro holds the reproduce-first cases for open bugs, one script
// per issue under testdata/repro (issue581.txtar runs as TestRepro/issue581).
// A repro stays RED until its bug is fixed; the bug-repro board runs them,
// whitelisted as known-red, and does not gate on them.
package repro

import (
	"os"
	"testing"

	"github.com/reproboard/reproboard/harness/script"
	"github.com/reproboard/reproboard/harness/section"
)

func TestMain(m *testing.M) { os.Exit(section.Main(m)) }

// TestRepro runs every repro script, each in its own section.
func TestRepro(t *testing.T) {
	script.Run(t, script.Params{Dir: "../testdata/repro"})
}
