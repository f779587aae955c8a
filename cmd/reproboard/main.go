// Command reproboard runs boards of Go tests (gating guards, non-gating
// bug repros), classifies every section against boards.yaml and writes
// the reports: terminal, JSON, Markdown, JUnit and HTML.
//
// Exit codes follow the guard contract: 0 green, 1 regression, 2 setup
// failure (a bad config, a target that did not build, nothing verified).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/term"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/script"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand; its usage text sits next to its code.
type command struct {
	name    string
	summary string
	usage   string // first line: the synopsis; then the flags and notes
	run     func(c *cli, cmd *command, args []string) int
}

var commands []*command // in the order usage lists them

func init() {
	commands = []*command{runCommand, reproCommand, listCommand, mergeCommand, historyCommand, flakyCommand}
}

// cli is what a command may touch: its output streams and context.
type cli struct {
	ctx            context.Context
	stdout, stderr io.Writer
}

// run is main without os.Exit, so tests drive the whole command in-process.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := &cli{ctx: ctx, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		c.mainUsage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[1] == "commands" {
			fmt.Fprint(stdout, script.ReferenceText())
			return 0
		}
		if len(args) > 1 {
			if cmd := lookup(args[1]); cmd != nil {
				fmt.Fprint(stdout, cmd.usage)
				return 0
			}
		}
		c.mainUsage(stdout)
		return 0
	}
	cmd := lookup(args[0])
	if cmd == nil {
		fmt.Fprintf(stderr, "reproboard: unknown command %q\n\n", args[0])
		c.mainUsage(stderr)
		return 2
	}
	return cmd.run(c, cmd, args[1:])
}

func lookup(name string) *command {
	for _, cmd := range commands {
		if cmd.name == name {
			return cmd
		}
	}
	return nil
}

func (c *cli) mainUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: reproboard <command> [flags] [args]")
	fmt.Fprintln(w)
	for _, cmd := range commands {
		fmt.Fprintf(w, "  %-7s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'reproboard help <command>' for its flags, 'reproboard help commands' for the")
	fmt.Fprintln(w, "commands and variables of guard scripts.")
	fmt.Fprintln(w, "Exit codes: 0 green, 1 regression, 2 setup failure (bad config, no build, nothing verified).")
}

// parse parses flags that may come before, between or after the
// positional arguments ("run guards --json x.json"), and reports a usage
// error as exit code 2 (ok false).
func (c *cli) parse(fs *flag.FlagSet, cmd *command, args []string) (pos []string, code int, ok bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, cmd.usage)
			return nil, 0, false
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "reproboard %s: %v\n\n%s", cmd.name, err, cmd.usage)
			return nil, 2, false
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, 0, true
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), 0, true
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// usageError reports a wrong invocation: exit 2, with the command's usage.
func (c *cli) usageError(cmd *command, format string, args ...any) int {
	fmt.Fprintf(c.stderr, "reproboard %s: %s\n\n%s", cmd.name, fmt.Sprintf(format, args...), cmd.usage)
	return 2
}

// fail reports an error that is not a usage error: exit 2.
func (c *cli) fail(cmd *command, err error) int {
	msg := strings.TrimRight(err.Error(), "\n")
	fmt.Fprintf(c.stderr, "reproboard %s: %s\n", cmd.name, strings.ReplaceAll(msg, "\n", "\n  "))
	return 2
}

// combineExit is the exit code of several boards: a regression (1) beats
// a setup failure (2), which beats green (0); see board.CombineExit.
func combineExit(codes []int) int { return board.CombineExit(codes) }

// isTerminal reports whether w is a terminal: the progress line updates
// in place there (NO_COLOR does not change that; TERM=dumb does).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}

// useColor reports whether to colour what goes to w: a terminal, unless
// NO_COLOR is set (https://no-color.org).
func useColor(w io.Writer) bool { return isTerminal(w) && os.Getenv("NO_COLOR") == "" }

// termWidth is w's width in columns, or 0 when it does not say (the
// reports then use 80).
func termWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
		return cols
	}
	return 0
}
