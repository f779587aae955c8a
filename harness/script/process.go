package script

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/reproboard/reproboard/harness/backstop"
	"github.com/reproboard/reproboard/harness/excerpt"
	"github.com/reproboard/reproboard/harness/outcome"
	"github.com/reproboard/reproboard/harness/section"
	"github.com/reproboard/reproboard/harness/wait"
)

type procHandle struct {
	*section.Proc
	spawned time.Time // the default -while watch is the last spawned
}

type pidHandle struct {
	backstop.Proc
}

// runOnce runs a command line to its end and hands its stdout and stderr
// to the script, so `stdout`, `stderr` and `pidfrom` see them.
func (c *call) runOnce(args []string, timeout time.Duration, stdin []byte) (section.Result, error) {
	argv, err := c.argv(args)
	if err != nil {
		return section.Result{}, err
	}
	res := c.st.sec.Run(c.stdinSpec(argv, c.within(timeout), stdin))
	fmt.Fprint(c.stdout(), res.Stdout)
	fmt.Fprint(c.stderr(), res.Stderr)
	return res, nil
}

func describe(args []string, res section.Result) string {
	return fmt.Sprintf("%s: rc=%d after %s\n%s", strings.Join(args, " "), res.RC, res.Duration.Round(time.Millisecond), tails(res, 0))
}

var cmdTarget = command{
	usage: "[!] target [-timeout d] [-stdin FILE] [--] args... — run the target binary with args (its own flags pass through: target --daemonize yes; -- only before an arg named -timeout or -stdin); ! expects a non-zero exit (a timeout always fails)",
	neg:   negSelf,
	bang:  "expects a non-zero exit; a timeout fails either way",
	run: func(c *call) error {
		timeout := c.timeoutFlag()
		stdinFile := c.flags.String("stdin", "", "file fed to standard input")
		if err := c.parseLeading(); err != nil {
			return err
		}
		var stdin []byte
		if *stdinFile != "" {
			stdin = []byte(c.ts.ReadFile(*stdinFile))
		}
		args := append([]string{"target"}, c.args...)
		res, err := c.runOnce(args, *timeout, stdin)
		if err != nil {
			return err
		}
		switch {
		case res.TimedOut:
			return fmt.Errorf("target hung: %s", describe(c.args, res))
		case res.RC == -1:
			return fmt.Errorf("target did not start: %v", res.Err)
		case c.neg && res.RC == 0:
			return fmt.Errorf("target %s: unexpected success (rc 0) after %s\n%s", strings.Join(c.args, " "), res.Duration.Round(time.Millisecond), tails(res, 0))
		case !c.neg && res.RC != 0:
			return fmt.Errorf("target failed: %s", describe(c.args, res))
		}
		return nil
	},
}

// runArgs parses the flags run and setup share: the timeout and the
// standard input of the command line that follows them.
func (c *call) runArgs() (time.Duration, []byte, error) {
	timeout := c.timeoutFlag()
	stdinFile := c.flags.String("stdin", "", "file fed to standard input")
	if err := c.parse(1, -1); err != nil {
		return 0, nil, err
	}
	var stdin []byte
	if *stdinFile != "" {
		stdin = []byte(c.ts.ReadFile(*stdinFile))
	}
	return *timeout, stdin, nil
}

var cmdRun = command{
	usage: "[!] run [-timeout d] [-stdin FILE] cmd args... — run a command, bounded and supervised (write it where testscript's exec would be); ! expects a non-zero exit (a timeout always fails)",
	neg:   negSelf,
	run: func(c *call) error {
		timeout, stdin, err := c.runArgs()
		if err != nil {
			return err
		}
		res, err := c.runOnce(c.args, timeout, stdin)
		if err != nil {
			return err
		}
		switch {
		case res.TimedOut:
			return fmt.Errorf("run hung: %s", describe(c.args, res))
		case res.RC == -1:
			return fmt.Errorf("run %s: did not start: %v", strings.Join(c.args, " "), res.Err)
		case c.neg && res.RC == 0:
			return fmt.Errorf("run %s: unexpected success (rc 0); output tail:\n%s", strings.Join(c.args, " "), res.Excerpt())
		case !c.neg && res.RC != 0:
			return fmt.Errorf("run failed: %s", describe(c.args, res))
		}
		return nil
	},
}

var cmdSetup = command{
	usage: "setup [-timeout d] [-stdin FILE] cmd args... — a precondition this section does not own; its failure is SETUP-FAIL, not RED",
	neg:   negNever,
	run: func(c *call) error {
		timeout, stdin, err := c.runArgs()
		if err != nil {
			return err
		}
		res, err := c.runOnce(c.args, timeout, stdin)
		if err == nil && res.RC != 0 {
			err = fmt.Errorf("%s", describe(c.args, res))
		}
		if err != nil {
			c.st.mark(outcome.SetupFail, fmt.Sprintf("precondition `%s` failed", strings.Join(c.args, " ")))
			return fmt.Errorf("SETUP-FAIL: precondition failed: %v", err)
		}
		return nil
	},
}

var cmdSpawn = command{
	usage: "spawn [-timeout d] NAME cmd args... — start a background process under the backstop; prints its pid",
	run: func(c *call) error {
		timeout := c.timeoutFlag()
		if err := c.parse(2, -1); err != nil {
			return err
		}
		name := c.args[0]
		c.st.mu.Lock()
		_, dup := c.st.procs[name]
		c.st.mu.Unlock()
		if dup {
			return c.usagef("a process named %s exists already", name)
		}
		argv, err := c.argv(c.args[1:])
		if err != nil {
			return err
		}
		p, err := c.st.sec.Start(name, c.specWithin(argv, c.within(*timeout)))
		if err != nil {
			return err
		}
		c.st.mu.Lock()
		c.st.procs[name] = &procHandle{Proc: p, spawned: time.Now()}
		c.st.mu.Unlock()
		fmt.Fprintf(c.stdout(), "spawned %s (pid %d)\n", name, p.Pid())
		return nil
	},
}

func (c *call) proc(name string) (*procHandle, error) {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	p, ok := c.st.procs[name]
	if !ok {
		return nil, c.usagef("no spawned process named %s", name)
	}
	return p, nil
}

var cmdSend = command{
	usage: "send NAME text... — write the text and a newline to the process's stdin",
	run: func(c *call) error {
		if err := c.parse(2, -1); err != nil {
			return err
		}
		p, err := c.proc(c.args[0])
		if err != nil {
			return err
		}
		if err := p.Send(strings.Join(c.args[1:], " ") + "\n"); err != nil {
			return fmt.Errorf("send to %s: %v; its output tail:\n%s", p.Name, err, excerpt.Excerpt(p.Output(), 0))
		}
		return nil
	},
}

var cmdWaitline = command{
	usage: "waitline [-timeout d] [-stdout|-stderr] [-while OTHER] NAME regexp — wait for a line of the process's output; gives up at once when NAME (or OTHER) exits",
	run: func(c *call) error {
		timeout := c.timeoutFlag()
		onlyOut := c.flags.Bool("stdout", false, "stdout only")
		onlyErr := c.flags.Bool("stderr", false, "stderr only")
		while := c.whileFlag()
		if err := c.parse(2, 2); err != nil {
			return err
		}
		re, err := regexp.Compile(c.args[1])
		if err != nil {
			return c.usagef("%v", err)
		}
		p, err := c.proc(c.args[0])
		if err != nil {
			return err
		}
		stream := ""
		if *onlyOut {
			stream = "stdout"
		} else if *onlyErr {
			stream = "stderr"
		}
		line, err := c.waitLine(p, *while, stream, re, c.within(*timeout))
		if err != nil {
			return fmt.Errorf("%v\n%s output tail:\n%s", err, p.Name, excerpt.Excerpt(p.Output(), 0))
		}
		fmt.Fprintln(c.stdout(), line.Text)
		return nil
	},
}

var signals = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP,
	"QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT,
}

func parseSignal(s string) (syscall.Signal, error) {
	s = strings.TrimPrefix(strings.ToUpper(s), "SIG")
	if sig, ok := signals[s]; ok {
		return sig, nil
	}
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	return 0, fmt.Errorf("unknown signal %q (use TERM, KILL, INT, HUP, QUIT, USR1, USR2, STOP, CONT or a number)", s)
}

var cmdSignal = command{
	usage: "signal NAME SIG — send a signal (TERM, KILL, INT, HUP, ... or a number) to a spawned process",
	run: func(c *call) error {
		if err := c.parse(2, 2); err != nil {
			return err
		}
		sig, err := parseSignal(c.args[1])
		if err != nil {
			return c.usagef("%v", err)
		}
		p, err := c.proc(c.args[0])
		if err != nil {
			return err
		}
		return p.Signal(sig)
	},
}

var cmdReap = command{
	usage: "[!] reap [-timeout d] NAME — wait for a spawned process to exit; it must exit 0 (! : non-zero)",
	neg:   negSelf,
	bang:  "the process must exit non-zero",
	run: func(c *call) error {
		timeout := c.timeoutFlag()
		if err := c.parse(1, 1); err != nil {
			return err
		}
		p, err := c.proc(c.args[0])
		if err != nil {
			return err
		}
		res, err := p.Wait(c.within(*timeout))
		if err != nil {
			return fmt.Errorf("%v; output tail:\n%s", err, excerpt.Excerpt(p.Output(), 0))
		}
		fmt.Fprint(c.stdout(), res.Output)
		switch {
		case res.TimedOut:
			return fmt.Errorf("%s was stopped at its deadline: %s", p.Name, describe(p.Args, res))
		case c.neg && res.RC == 0:
			return fmt.Errorf("%s exited 0, want non-zero: %s", p.Name, describe(p.Args, res))
		case !c.neg && res.RC != 0:
			return fmt.Errorf("%s exited %d: %s", p.Name, res.RC, describe(p.Args, res))
		}
		return nil
	},
}

var cmdPoll = command{
	usage: "[!] poll [-timeout d] [-every d] [-stdout re] [-stderr re] [-fail re] [-while NAME] cmd args... — retry until the command exits 0 (! : non-zero) and its output matches (multi-line, as stdout's); gives up at once when the output matches -fail (a state the wait cannot leave) or the watched process exits",
	neg:   negSelf,
	bang:  "retry until the command exits non-zero",
	run: func(c *call) error {
		timeout := c.timeoutFlag()
		every := c.flags.Duration("every", 200*time.Millisecond, "pause between attempts")
		outRE := c.flags.String("stdout", "", "stdout must match")
		errRE := c.flags.String("stderr", "", "stderr must match")
		while := c.whileFlag()
		failRE := c.flags.String("fail", "", "give up at once when stdout or stderr matches")
		if err := c.parse(1, -1); err != nil {
			return err
		}
		var reOut, reErr, reFail *regexp.Regexp
		var err error
		if *failRE != "" {
			if reFail, err = regexp.Compile("(?m)" + *failRE); err != nil {
				return c.usagef("-fail: %v", err)
			}
		}
		if *outRE != "" {
			if reOut, err = regexp.Compile("(?m)" + *outRE); err != nil {
				return c.usagef("-stdout: %v", err)
			}
		}
		if *errRE != "" {
			if reErr, err = regexp.Compile("(?m)" + *errRE); err != nil {
				return c.usagef("-stderr: %v", err)
			}
		}
		argv, err := c.argv(c.args)
		if err != nil {
			return err
		}
		want := "exit 0"
		if c.neg {
			want = "a non-zero exit"
		}
		if reOut != nil {
			want += fmt.Sprintf(", stdout matching %q", *outRE)
		}
		if reErr != nil {
			want += fmt.Sprintf(", stderr matching %q", *errRE)
		}
		w, err := c.watcher(*while)
		if err != nil {
			return err
		}
		d := c.within(*timeout)
		deadline := time.Now().Add(d)
		var last section.Result
		attempts := 0
		err = c.watchedWait(w, fmt.Sprintf("`%s` to give %s", strings.Join(c.args, " "), want), d, *every, func() wait.Result {
			attempts++
			res := c.st.sec.Run(c.specWithin(argv, max(time.Until(deadline), time.Millisecond)))
			// An attempt cut short by the poll's own deadline says less than
			// the complete one before it: keep that one to report.
			if !res.TimedOut || last.Args == nil || last.TimedOut {
				last = res
			}
			ok := (res.RC == 0) != c.neg && !res.TimedOut && res.RC != -1
			ok = ok && (reOut == nil || reOut.MatchString(res.Stdout)) && (reErr == nil || reErr.MatchString(res.Stderr))
			if ok {
				last = res
				return wait.Done()
			}
			if reFail != nil && (reFail.MatchString(res.Stdout) || reFail.MatchString(res.Stderr)) {
				last = res
				return wait.Fail(fmt.Errorf("gave up after attempt %d waiting for `%s` to give %s: its output matched -fail %q, a state this wait cannot leave", attempts, strings.Join(c.args, " "), want, *failRE))
			}
			return wait.Continue("attempt %d rc=%d", attempts, last.RC)
		})
		fmt.Fprint(c.stdout(), last.Stdout)
		fmt.Fprint(c.stderr(), last.Stderr)
		if err != nil {
			return fmt.Errorf("%v; the last attempt (rc=%d after %s) printed:\n%s", err, last.RC, last.Duration.Round(time.Millisecond), tails(last, 0))
		}
		return nil
	},
}

var defaultPidRE = regexp.MustCompile(`pid[: ]+(\d+)`)

var cmdPidfrom = command{
	usage: "pidfrom VAR [regexp] — set $VAR to the pid in the last command's output (default `pid[: ]+(\\d+)`) and put it under the backstop",
	run: func(c *call) error {
		if err := c.parse(1, 2); err != nil {
			return err
		}
		re := defaultPidRE
		if len(c.args) == 2 {
			var err error
			if re, err = regexp.Compile(c.args[1]); err != nil || re.NumSubexp() < 1 {
				return c.usagef("regexp %q must compile and have a group for the pid", c.args[1])
			}
		}
		text := c.ts.ReadFile("stdout") + "\n" + c.ts.ReadFile("stderr")
		m := re.FindStringSubmatch(text)
		if m == nil {
			return fmt.Errorf("pidfrom %s: no match for `%s` in the last command's output:\n%s", c.args[0], re.String(), excerpt.Excerpt(text, 0))
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || pid <= 0 {
			return fmt.Errorf("pidfrom %s: %q is not a pid", c.args[0], m[1])
		}
		h := pidHandle{backstop.Proc{Pid: pid}}
		if p, err := backstop.Identify(pid); err == nil {
			h.Proc = p
			_ = c.st.sec.Record(pid)
		}
		c.st.mu.Lock()
		c.st.pids[c.args[0]] = h
		c.st.mu.Unlock()
		c.ts.Setenv(c.args[0], strconv.Itoa(pid))
		return nil
	},
}

// pidVar finds the process a variable names: from pidfrom (identity
// recorded then), or a pid in the variable, identified now.
func (c *call) pidVar(name string) (backstop.Proc, error) {
	c.st.mu.Lock()
	h, ok := c.st.pids[name]
	c.st.mu.Unlock()
	if ok {
		return h.Proc, nil
	}
	pid, err := strconv.Atoi(c.ts.Getenv(name))
	if err != nil || pid <= 0 {
		return backstop.Proc{}, c.usagef("$%s=%q does not hold a pid", name, c.ts.Getenv(name))
	}
	p, err := backstop.Identify(pid)
	if err != nil {
		return backstop.Proc{Pid: pid}, nil
	}
	return p, nil
}

var cmdAlive = command{
	usage: "[!] alive [-timeout d] VAR — the process in $VAR runs (start time checked; a zombie is dead); ! waits for it to end",
	neg:   negSelf,
	bang:  "wait for the process to end",
	run: func(c *call) error {
		timeout := c.flags.Duration("timeout", 10*time.Second, "how long ! alive waits")
		if err := c.parse(1, 1); err != nil {
			return err
		}
		p, err := c.pidVar(c.args[0])
		if err != nil {
			return err
		}
		if !c.neg {
			if p.Start == 0 || !p.Alive() {
				return fmt.Errorf("process $%s (pid %d) is not running", c.args[0], p.Pid)
			}
			return nil
		}
		return wait.For(context.Background(), fmt.Sprintf("process $%s (%s) to end", c.args[0], p), c.within(*timeout), 20*time.Millisecond, func() wait.Result {
			if p.Start == 0 || !p.Alive() {
				return wait.Done()
			}
			return wait.Continue("still running")
		})
	},
}

var cmdKillpid = command{
	usage: "killpid [-SIG] VAR — signal the process in $VAR (default KILL), only if its start time still matches",
	run: func(c *call) error {
		sig := syscall.SIGKILL
		args := c.args
		if len(args) == 2 && strings.HasPrefix(args[0], "-") {
			s, err := parseSignal(args[0][1:])
			if err != nil {
				return c.usagef("%v", err)
			}
			sig, args = s, args[1:]
		}
		if len(args) != 1 {
			return c.usagef("wrong number of arguments")
		}
		p, err := c.pidVar(args[0])
		if err != nil {
			return err
		}
		if p.Start == 0 {
			return fmt.Errorf("killpid %s: pid %d was not running when it was captured", args[0], p.Pid)
		}
		return backstop.Signal(p, sig)
	},
}

var cmdSamepid = command{
	usage: "[!] samepid VAR1 VAR2 — $VAR1 and $VAR2 hold the same pid",
	neg:   negInvert,
	bang:  "the two pids differ",
	run: func(c *call) error {
		if err := c.parse(2, 2); err != nil {
			return err
		}
		a, b := c.ts.Getenv(c.args[0]), c.ts.Getenv(c.args[1])
		if a == "" || b == "" {
			return c.usagef("$%s=%q and $%s=%q must both hold a pid", c.args[0], a, c.args[1], b)
		}
		if a != b {
			return fmt.Errorf("$%s=%s and $%s=%s are different processes", c.args[0], a, c.args[1], b)
		}
		return nil
	},
}
