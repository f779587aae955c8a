// Package leakertest builds the leaker programs of testdata/leakers (one
// MCP server per runtime that keeps LEAK_BYTES per call and churns
// garbage) for the tests and benchmarks that calibrate the leak tier.
package leakertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Runtimes are the leakers, in the order tests run them.
var Runtimes = []string{"go", "c", "node"}

// Leaker is one runtime's leaker: Path is an executable that speaks MCP on
// stdio, or Skip says why this machine has none.
type Leaker struct {
	Runtime string
	Path    string
	Skip    string
}

// Dir is testdata/leakers, found upwards from the working directory.
func Dir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "testdata", "leakers")
		if _, err := os.Stat(filepath.Join(p, "leaker.c")); err == nil {
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("testdata/leakers not found above %s", wd)
		}
	}
}

// Build builds every leaker into out: the Go one with the go command
// that runs the tests, the C one with gcc, and the Node one is its
// script, run by the node found in PATH. A runtime whose tool is missing
// comes back with Skip set; any other failure is an error.
func Build(out string) ([]Leaker, error) {
	src, err := Dir()
	if err != nil {
		return nil, err
	}
	var ls []Leaker
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	g := Leaker{Runtime: "go", Path: filepath.Join(out, "goleaker")}
	cmd := exec.Command(goBin, "build", "-o", g.Path, ".")
	cmd.Dir = filepath.Join(src, "goleaker")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s: %v\n%s", cmd.Dir, err, b)
	}
	ls = append(ls, g)

	c := Leaker{Runtime: "c", Path: filepath.Join(out, "cleaker")}
	if gcc, err := exec.LookPath("gcc"); err != nil {
		c.Skip = "gcc is not installed (apt-get install gcc): the C leaker is compiled at test time"
	} else {
		cmd := exec.Command(gcc, "-O2", "-Wall", "-o", c.Path, filepath.Join(src, "leaker.c"))
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("gcc leaker.c: %v\n%s", err, b)
		}
	}
	ls = append(ls, c)

	n := Leaker{Runtime: "node", Path: filepath.Join(src, "leaker.js")}
	if _, err := exec.LookPath("node"); err != nil {
		n.Skip = "node is not installed (apt-get install nodejs): the Node.js leaker runs on it"
	}
	ls = append(ls, n)
	return ls, nil
}

// Metric is the best memory metric for this runtime's leaker: uss, or for
// Node.js v8heap (the V8 heap after a forced GC), since V8's lazy heap
// sizing moves USS by more than a small leak does.
func (l Leaker) Metric() string {
	if l.Runtime == "node" {
		return "v8heap"
	}
	return "uss"
}

// Env is the variables a leak script reads: LEAKER (the command that
// starts the leaker), LEAKER_RUNTIME and LEAK_METRIC (Metric).
func (l Leaker) Env() []string {
	return []string{"LEAKER=" + l.Path, "LEAKER_RUNTIME=" + strings.ToLower(l.Runtime), "LEAK_METRIC=" + l.Metric()}
}
