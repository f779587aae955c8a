// Package guards runs redis-server's guard scripts (../testdata/guards),
// each in its own section, against the target of the board that lists
// this package in ../boards.yaml.
package guards

import (
	"os"
	"testing"

	"github.com/reproboard/reproboard/harness/script"
	"github.com/reproboard/reproboard/harness/section"
)

func TestMain(m *testing.M) { os.Exit(section.Main(m)) }

func TestGuards(t *testing.T) {
	script.Run(t, script.Params{Dir: "../testdata/guards"})
}
