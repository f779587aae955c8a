package script

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/reproboard/reproboard/harness/config"
	"github.com/reproboard/reproboard/harness/excerpt"
	"github.com/reproboard/reproboard/harness/section"
	"github.com/reproboard/reproboard/harness/wait"
)

// noWatch is the -while value that turns watching off.
const noWatch = "none"

// whileFlag registers -while NAME on a wait command.
func (c *call) whileFlag() *string {
	return c.flags.String("while", "", "give up at once when this spawned process exits (default: the last spawned one still running; none: no watch)")
}

// watcher is the spawned process a wait depends on: once it has exited,
// what the wait waits for can no longer happen, so the wait ends at once.
type watcher struct {
	p    *procHandle
	auto bool // chosen by default, not named by -while
}

// watcher resolves -while: a named process, none, or by default the
// process spawned last that is still running when the wait begins (the
// one whose effect a script waits for right after starting it).
func (c *call) watcher(name string) (*watcher, error) {
	switch name {
	case noWatch:
		return nil, nil
	case "":
		c.st.mu.Lock()
		defer c.st.mu.Unlock()
		var last *procHandle
		for _, p := range c.st.procs {
			if !p.Exited() && (last == nil || p.spawned.After(last.spawned)) {
				last = p
			}
		}
		if last == nil {
			return nil, nil
		}
		return &watcher{p: last, auto: true}, nil
	}
	p, err := c.proc(name)
	if err != nil {
		return nil, err
	}
	return &watcher{p: p}, nil
}

// exited reports whether the watched process has ended. Callers read it
// before checking their condition: what the process did before it exited
// is still seen.
func (w *watcher) exited() bool { return w != nil && w.p.Exited() }

// gaveUp is the error of a wait whose process ended: its exit status, how
// long it ran, how long the wait had waited, and its output tail.
func (w *watcher) gaveUp(what string, waited time.Duration, last string) error {
	res, _ := w.p.Wait(time.Second)
	how := "-while " + w.p.Name
	if w.auto {
		how = "it was the last spawned process still running when the wait began; -while none waits regardless"
	}
	out := res.Output
	if out == "" {
		out = "(no output)"
	} else {
		out = excerpt.Excerpt(out, 0)
	}
	if last == "" {
		last = "(nothing)"
	}
	return fmt.Errorf("gave up after %s waiting for %s: %s (pid %d) exited with rc %d after %s, so it can no longer happen (%s); last saw: %s\n%s output tail:\n%s",
		waited.Round(time.Millisecond), what, w.p.Name, w.p.Pid(), res.RC, res.Duration.Round(time.Millisecond), how, last, w.p.Name, out)
}

// watchedWait is wait.For that also ends when the watcher's process has
// exited and check still says not yet.
func (c *call) watchedWait(w *watcher, what string, d, every time.Duration, check func() wait.Result) error {
	start := time.Now()
	var last string
	err := wait.For(context.Background(), what, d, every, func() wait.Result {
		gone := w.exited()
		r := check()
		if seen, ok := r.Seen(); ok {
			last = seen
		}
		if gone && r.Pending() {
			return wait.Fail(w.gaveUp(what, time.Since(start), last))
		}
		return r
	})
	return err
}

// tails shows a finished command's stdout and stderr tails apart, each
// `(no output)` when empty, and the timeout marker when it timed out.
func tails(res section.Result, limit int) string {
	var b strings.Builder
	for _, s := range []struct{ name, text string }{{"stdout", res.Stdout}, {"stderr", res.Stderr}} {
		if s.text == "" && res.Stdout == "" && res.Stderr == "" && res.Output != "" {
			// Only the interleaved output was kept (a background process).
			s.text = res.Output
			if s.name == "stderr" {
				continue
			}
			s.name = "output"
		}
		fmt.Fprintf(&b, "%s tail:\n", s.name)
		if s.text == "" {
			b.WriteString("(no output)\n")
			continue
		}
		b.WriteString(strings.TrimSuffix(excerpt.Excerpt(s.text, limit), "\n"))
		b.WriteString("\n")
	}
	if res.RC == -1 && res.Err != nil {
		fmt.Fprintf(&b, "(no exit status: %v)\n", res.Err)
	}
	if res.TimedOut {
		if i := strings.LastIndex(res.Output, "[timed out after"); i >= 0 {
			b.WriteString(res.Output[i:])
			b.WriteString("\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// addr is ADDR of waitport: a port (on 127.0.0.1) or host:port.
func addr(s string) (string, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > 65535 {
			return "", fmt.Errorf("port %d is out of range", n)
		}
		return net.JoinHostPort("127.0.0.1", s), nil
	}
	if _, _, err := net.SplitHostPort(s); err != nil {
		return "", err
	}
	return s, nil
}

var cmdWaitport = command{
	usage: "[!] waitport [-timeout d] [-while NAME] ADDR — wait until ADDR (PORT on 127.0.0.1, or HOST:PORT) accepts connections; ! waits until it no longer does (released)",
	bang:  "wait until it no longer accepts connections",
	neg:   negSelf,
	run: func(c *call) error {
		timeout := c.timeoutFlag()
		while := c.whileFlag()
		if err := c.parse(1, 1); err != nil {
			return err
		}
		a, err := addr(c.args[0])
		if err != nil {
			return c.usagef("ADDR %q: %v", c.args[0], err)
		}
		w, err := c.watcher(*while)
		if err != nil {
			return err
		}
		what := a + " to accept connections"
		if c.neg {
			what = a + " to stop accepting connections (released)"
		}
		return c.watchedWait(w, what, c.within(*timeout), 50*time.Millisecond, func() wait.Result {
			conn, err := net.DialTimeout("tcp", a, 500*time.Millisecond)
			if err == nil {
				conn.Close()
				if c.neg {
					return wait.Continue("a connection was accepted")
				}
				return wait.Done()
			}
			if c.neg {
				var op *net.OpError
				if errors.As(err, &op) && strings.Contains(err.Error(), "refused") {
					return wait.Done()
				}
			}
			return wait.Continue("%v", err)
		})
	},
}

// waitLine is Proc.WaitLine, which gives up when p itself exits, watching
// another process too when -while names one.
func (c *call) waitLine(p *procHandle, while, stream string, re *regexp.Regexp, d time.Duration) (section.Line, error) {
	if while == "" || while == noWatch || while == p.Name {
		return p.WaitLine(stream, re, d)
	}
	w, err := c.watcher(while)
	if err != nil {
		return section.Line{}, err
	}
	start := time.Now()
	deadline := start.Add(d)
	const slice = 100 * time.Millisecond
	for {
		gone := w.exited()
		left := time.Until(deadline)
		line, err := p.WaitLine(stream, re, max(min(slice, left), time.Millisecond))
		var te *wait.TimeoutError
		switch {
		case err == nil || !errors.As(err, &te):
			return line, err
		case gone:
			return line, w.gaveUp(fmt.Sprintf("%s to print a line matching %q", p.Name, re.String()), time.Since(start), te.LastSeen)
		case left <= slice:
			return line, fmt.Errorf("timed out after %s waiting for %s to print a line matching %q; last saw: %s",
				time.Since(start).Round(time.Millisecond), p.Name, re.String(), te.LastSeen)
		}
	}
}

// FeaturesEnv overrides the features of the target's profile, comma
// separated: a build that has (or lacks) what its profile says.
const FeaturesEnv = "REPROBOARD_TARGET_FEATURES"

// hasFeature reports whether the target has feature f: from FeaturesEnv
// when it is set, else from the profile's features list.
func hasFeature(t *config.Target, f string) bool {
	list := t.Features
	if v, ok := os.LookupEnv(FeaturesEnv); ok {
		list = strings.Split(v, ",")
	}
	for _, have := range list {
		if strings.TrimSpace(have) == f {
			return true
		}
	}
	return false
}

// FailedAfterAttr is the test attribute that says how long the failing
// command ran before it failed: the time from the cause to RED for a
// command that misbehaved, and the waste for a wait that gave up.
const FailedAfterAttr = "reproboard.failed_after"

// ran notes the command that just ran, for failedCommand.
func (st *state) ran(name string, began time.Time) {
	st.mu.Lock()
	st.lastName, st.lastTook = name, time.Since(began)
	st.mu.Unlock()
}

// failedCommand records the failing command and its duration as a test
// attribute, once per section.
func (st *state) failedCommand() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.attrDone || st.lastName == "" {
		return
	}
	st.attrDone = true
	st.t.Attr(FailedAfterAttr, fmt.Sprintf("%s %.3fs", st.lastName, st.lastTook.Seconds()))
}

// failedCheck records a failure of one of testscript's own checks
// (stdout, exists, ...): it is immediate, right after the command whose
// output or effect it checks.
func (st *state) failedCheck() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.attrDone {
		return
	}
	st.attrDone = true
	st.t.Attr(FailedAfterAttr, fmt.Sprintf("a check after %s 0.000s", st.lastName))
}
