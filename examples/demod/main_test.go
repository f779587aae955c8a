package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/reproboard/reproboard/harness/section"
)

// binary is demod, built once by TestMain into the run's directory.
var binary string

func TestMain(m *testing.M) {
	r, err := section.DefaultRun()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binary = filepath.Join(r.Dir, "demod")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building demod: %v\n%s", err, out)
		section.CloseDefaultRun()
		os.Exit(2)
	}
	os.Exit(section.Main(m))
}
