package script

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/reproboard/reproboard/harness/section"
)

// negation says what `!` before a command means.
type negation int

const (
	negNever  negation = iota // `!` is a usage error
	negInvert                 // the engine expects the command to fail
	negSelf                   // the command gives `!` its own meaning (wait for the opposite)
)

// command is one script command: its usage next to its code, so help and
// errors come from one place.
type command struct {
	usage string
	neg   negation
	// bang says what `!` means for a command that takes it; the default
	// comes from neg.
	bang string
	run  func(c *call) error
}

// call is one invocation of a command.
type call struct {
	ts    *testscript.TestScript
	st    *state
	name  string
	neg   bool
	args  []string
	flags *flag.FlagSet
	usage string
	env   []string // the script's environment, as `exec` passes it
}

// spec is a command line to run in the script's directory with the
// script's environment: what `env` set reaches the target too.
func (c *call) spec(argv []string) section.Spec {
	return section.Spec{Args: argv, Dir: c.ts.MkAbs("."), Env: c.env}
}

func (c *call) specWithin(argv []string, d time.Duration) section.Spec {
	s := c.spec(argv)
	s.Timeout = d
	return s
}

func (c *call) stdinSpec(argv []string, d time.Duration, stdin []byte) section.Spec {
	s := c.specWithin(argv, d)
	s.Stdin = stdin
	return s
}

// rawSpec leaves stdout to a protocol client and sends stderr to a file.
func (c *call) rawSpec(argv []string, stderrFile string) section.Spec {
	s := c.spec(argv)
	s.RawStdout, s.StderrFile = true, stderrFile
	return s
}

// scriptEnv is the script's environment: the section's variables and
// whatever the script set with `env`. testscript keeps it unexported, so it
// is read by reflection; TestScriptEnvReachesCommands pins that read, and a
// version of go-internal without it fails every command loudly.
func scriptEnv(ts *testscript.TestScript) ([]string, bool) {
	v := reflect.ValueOf(ts).Elem().FieldByName("env")
	if !v.IsValid() || v.Kind() != reflect.Slice || v.Type().Elem().Kind() != reflect.String {
		return nil, false
	}
	out := make([]string, v.Len())
	for i := range out {
		out[i] = v.Index(i).String()
	}
	return out, true
}

// usageError is a malformed invocation.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func (c *call) usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// parse parses the command's flags; the rest must number between min and
// max (max < 0: unbounded).
func (c *call) parse(min, max int) error {
	if err := c.flags.Parse(c.args); err != nil {
		return c.usagef("%v", err)
	}
	c.args = c.flags.Args()
	if len(c.args) < min || (max >= 0 && len(c.args) > max) {
		return c.usagef("wrong number of arguments")
	}
	return nil
}

// parseLeading parses only the command's own flags at the front of its
// arguments and stops at the first argument that is not one of them, so
// the program's own flags pass through (`target --daemonize yes`). A `--`
// ends the command's flags explicitly: it is needed only to pass the
// program an argument spelled like one of the command's own flags.
func (c *call) parseLeading() error {
	i := 0
	for i < len(c.args) {
		a := c.args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || len(a) < 2 {
			break
		}
		name, _, inline := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		f := c.flags.Lookup(name)
		if f == nil {
			break // the program's own flag
		}
		if inline {
			if err := c.flags.Set(name, a[strings.IndexByte(a, '=')+1:]); err != nil {
				return c.usagef("%s: %v (if %s is the program's own flag, write %s -- %s)", a, err, a, c.name, strings.Join(c.args[i:], " "))
			}
			i++
			continue
		}
		if i+1 >= len(c.args) {
			return c.usagef("flag %s needs a value (if %s is the program's own flag, write %s -- %s)", a, a, c.name, a)
		}
		if err := c.flags.Set(name, c.args[i+1]); err != nil {
			return c.usagef("%s %s: %v (if %s is the program's own flag, write %s -- %s)", a, c.args[i+1], err, a, c.name, strings.Join(c.args[i:], " "))
		}
		i += 2
	}
	c.args = c.args[i:]
	return nil
}

// timeoutFlag registers -timeout, defaulting to the section's remaining time.
func (c *call) timeoutFlag() *time.Duration {
	return c.flags.Duration("timeout", 0, "how long to wait (default: the section's remaining time)")
}

// within is d, or the section's remaining time when d is zero or longer.
func (c *call) within(d time.Duration) time.Duration {
	if rem := c.st.sec.Remaining(); d <= 0 || d > rem {
		return max(rem, time.Millisecond)
	}
	return d
}

func (c *call) stdout() io.Writer { return c.ts.Stdout() }
func (c *call) stderr() io.Writer { return c.ts.Stderr() }

// argv resolves a command line: "target" is the target's binary, other
// names are looked up in PATH.
func (c *call) argv(args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, c.usagef("no command given")
	}
	out := slices.Clone(args)
	if out[0] == "target" {
		if c.st.target == nil {
			return nil, errors.New("this script runs without a target")
		}
		out[0] = c.st.target.Path
		return out, nil
	}
	if !strings.ContainsRune(out[0], '/') {
		p, err := exec.LookPath(out[0])
		if err != nil {
			return nil, err
		}
		out[0] = p
	} else {
		out[0] = c.ts.MkAbs(out[0])
	}
	return out, nil
}

// table is every reproboard command.
func table() map[string]command {
	return map[string]command{
		"target":   cmdTarget,
		"setup":    cmdSetup,
		"run":      cmdRun,
		"spawn":    cmdSpawn,
		"send":     cmdSend,
		"waitline": cmdWaitline,
		"signal":   cmdSignal,
		"reap":     cmdReap,
		"poll":     cmdPoll,
		"pidfrom":  cmdPidfrom,
		"alive":    cmdAlive,
		"killpid":  cmdKillpid,
		"samepid":  cmdSamepid,
		"storm":    cmdStorm,
		"holdport": cmdHoldport,
		"freeport": cmdFreeport,
		"holdlock": cmdHoldlock,
		"release":  cmdRelease,
		"waitfile": cmdWaitfile,
		"waitport": cmdWaitport,
		"capture":  cmdCapture,
		"mcp":      cmdMCP,
		"logtail":  cmdLogtail,
		"leak":     cmdLeak,
		"sleep":    cmdSleep,
	}
}

// Usage lists every command with its usage line.
func Usage() string {
	t := table()
	var b strings.Builder
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range t {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "%s\n", t[name].usage)
	}
	return b.String()
}

// Commands returns the commands for testscript.Params.Cmds. The wrapper
// gives every command the same handling of `!`, usage errors and failure.
func Commands() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	out := map[string]func(*testscript.TestScript, bool, []string){}
	for name, cmd := range table() {
		out[name] = func(ts *testscript.TestScript, neg bool, args []string) {
			st := stateOf(ts)
			if neg && cmd.neg == negNever {
				st.fail(ts, fmt.Sprintf("%s does not support `!`; usage: %s", name, cmd.usage))
			}
			fs := flag.NewFlagSet(name, flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			env, ok := scriptEnv(ts)
			if !ok {
				st.fail(ts, "reproboard cannot read the script's environment from this version of go-internal's testscript")
			}
			c := &call{ts: ts, st: st, name: name, neg: neg, args: args, flags: fs, usage: cmd.usage, env: env}
			began := time.Now()
			err := cmd.run(c)
			st.ran(name, began)
			var ue *usageError
			switch {
			case errors.As(err, &ue):
				st.fail(ts, fmt.Sprintf("%s: %s\nusage: %s", name, ue.msg, cmd.usage))
			case cmd.neg == negInvert && neg:
				if err == nil {
					st.fail(ts, fmt.Sprintf("%s %s: unexpected success", name, strings.Join(args, " ")))
				}
				ts.Logf("%s failed as expected: %v", name, err)
			case err != nil:
				st.fail(ts, err.Error())
			}
		}
	}
	return out
}

// fail records the failure for the board's reason, then fails the script.
func (st *state) fail(ts *testscript.TestScript, msg string) {
	st.failedCommand()
	st.mu.Lock()
	st.lastFailure = msg
	st.mu.Unlock()
	ts.Fatalf("%s", msg)
}
