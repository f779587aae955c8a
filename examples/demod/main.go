// Command demod is reproboard's embedded demo target: a small code-graph
// daemon with a Unix-socket rendezvous, an MCP server over stdio, one-shot
// CLI clients and a SQLite store. Its command-line contract is pinned in
// DEMOD-CONTRACT.md; its deliberate open bugs are listed in BUGS.md.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/reproboard/reproboard/examples/demod/internal/config"
	"github.com/reproboard/reproboard/examples/demod/internal/rendezvous"
)

const version = "0.1.0"

const usage = `usage: demod                          MCP server on stdin/stdout (attaches to the daemon)
       demod cli TOOL JSON               run one tool call (list_projects, index_repository, search_graph)
       demod daemon <start|stop|status> [--port=N]
       demod hook-augment                augment a tool-use hook (hook JSON on stdin)
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// app is one invocation's surroundings.
type app struct {
	env    config.Env
	paths  rendezvous.Paths
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "help", "-h", "--help":
			fmt.Fprint(stdout, usage)
			return 0
		case "version", "--version":
			fmt.Fprintf(stdout, "demod %s\n", version)
			return 0
		}
	}
	// Argument errors come before any environment check, so a usage
	// mistake is reported as such even in a broken environment.
	var cmd func(*app) int
	switch {
	case len(args) == 0:
		cmd = (*app).mcp
	case args[0] == "daemon":
		c, ok := parseDaemon(args[1:], stderr)
		if !ok {
			return 1
		}
		cmd = c
	case args[0] == "cli":
		c, ok := parseCLI(args[1:], stderr)
		if !ok {
			return 1
		}
		cmd = c
	case args[0] == "hook-augment":
		cmd = (*app).hook
	default:
		fmt.Fprintf(stderr, "error: unknown command: %s\n%s", args[0], usage)
		return 1
	}

	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	// Client processes stay quiet about the daemon's caps; the daemon
	// itself reports a bad value once, in its log.
	a.env = config.Load(os.Getenv, nil)
	if err := a.env.PrepareRuntimeDir(); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	a.paths = rendezvous.For(a.env.RuntimeDir)
	return cmd(a)
}

// fail prints an error line and returns exit code 1.
func (a *app) fail(format string, args ...any) int {
	fmt.Fprintf(a.stderr, "error: "+format+"\n", args...)
	return 1
}
