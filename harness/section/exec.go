package section

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/reproboard/reproboard/harness/backstop"
	"github.com/reproboard/reproboard/harness/excerpt"
	"github.com/reproboard/reproboard/harness/wait"
)

// TimeoutRC is the exit code reported for a command that outlived its
// timeout, as timeout(1) does.
const TimeoutRC = 124

// pipeDelay bounds how long a finished command's pipes may stay open
// because a grandchild inherited them: the wait must not hang on it.
const pipeDelay = time.Second

// Spec is one command to run in a section.
type Spec struct {
	Args    []string      // program and arguments
	Stdin   []byte        // fed to the command; nil means no input
	Timeout time.Duration // zero: the section's remaining time
	Dir     string        // zero: the section's root
	Env     []string      // extra KEY=VALUE entries
	Keep    int           // output bytes kept (tail); zero: excerpt.DefaultKeep

	// For Start only. RawStdout leaves stdout unread, for a protocol
	// client to read (Proc.Stdout). StderrFile sends stderr to that file
	// instead of the line buffer: the only trace of what a session saw.
	RawStdout  bool
	StderrFile string
}

// Result is a finished command.
type Result struct {
	Args     []string
	RC       int    // TimeoutRC when it timed out; -1 when it could not start
	Output   string // stdout and stderr interleaved as written (tail)
	Stdout   string // tail of stdout alone
	Stderr   string // tail of stderr alone
	Total    int64  // bytes of output, kept or not
	Duration time.Duration
	TimedOut bool
	Err      error // the start failure, or the timeout
}

// Excerpt is the tail of the output for a failure message.
func (r Result) Excerpt() string { return excerpt.Excerpt(r.Output, 0) }

func (s *Section) command(ctx context.Context, spec Spec) (*exec.Cmd, error) {
	if len(spec.Args) == 0 {
		return nil, errors.New("no command")
	}
	cmd := exec.CommandContext(ctx, spec.Args[0], spec.Args[1:]...)
	cmd.Env = append(s.Env(), spec.Env...)
	cmd.Dir = spec.Dir
	if cmd.Dir == "" {
		cmd.Dir = s.Root
	}
	// Its own process group: a timeout kills the command with the children
	// it did not detach; detached ones are the backstop's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = pipeDelay
	return cmd, nil
}

func (s *Section) timeout(d time.Duration) time.Duration {
	if d <= 0 || d > s.Remaining() {
		d = s.Remaining()
	}
	return max(d, time.Millisecond)
}

func (s *Section) started(cmd *exec.Cmd) {
	backstop.Own(cmd.Process.Pid)
	_ = s.Record(cmd.Process.Pid)
}

// Run runs a command to its end or its timeout. A timeout gives RC 124,
// the partial output, and a last line "[timed out after Ns]".
func (s *Section) Run(spec Spec) Result {
	d := s.timeout(spec.Timeout)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	res := Result{Args: spec.Args, RC: -1}
	cmd, err := s.command(ctx, spec)
	if err != nil {
		res.Err = err
		return res
	}
	out, stdout, stderr := excerpt.NewTail(spec.Keep), excerpt.NewTail(spec.Keep), excerpt.NewTail(spec.Keep)
	cmd.Stdout, cmd.Stderr = io.MultiWriter(out, stdout), io.MultiWriter(out, stderr)
	if spec.Stdin != nil {
		cmd.Stdin = bytes.NewReader(spec.Stdin)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		res.Err = err
		res.Output = err.Error()
		return res
	}
	s.started(cmd)
	err = cmd.Wait()
	backstop.Disown(cmd.Process.Pid)
	res.Duration = time.Since(start)
	res.Total = out.Total()
	res.Output, res.Stdout, res.Stderr = out.String(), stdout.String(), stderr.String()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		res.RC, res.TimedOut = TimeoutRC, true
		res.Err = fmt.Errorf("timed out after %s", d.Round(time.Millisecond))
		res.Output = strings.TrimSuffix(res.Output, "\n") + fmt.Sprintf("\n[timed out after %gs]", d.Round(time.Millisecond).Seconds())
	case cmd.ProcessState != nil:
		res.RC = cmd.ProcessState.ExitCode()
		if res.RC < 0 { // killed by a signal
			res.RC = 128 + int(cmd.ProcessState.Sys().(syscall.WaitStatus).Signal())
		}
	default:
		res.Err = err
	}
	return res
}

// Line is one line a background process printed.
type Line struct {
	Stream string // "stdout" or "stderr"
	Text   string
}

// maxLines bounds the lines a background process keeps for WaitLine.
const maxLines = 10000

// Proc is a background process of a section.
type Proc struct {
	Name string
	Args []string
	ID   backstop.Proc

	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *excerpt.Tail

	rawStdout io.ReadCloser
	done      chan struct{}
	res       Result

	mu      sync.Mutex
	lines   []Line
	dropped int // lines dropped from the front
	cursor  int // absolute index of the next line WaitLine looks at
}

// Start starts a background process. Its stdout and stderr are kept as a
// tail and as lines for WaitLine; it ends at the section's deadline if not
// before, and the backstop stops it with the section.
func (s *Section) Start(name string, spec Spec) (*Proc, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout(spec.Timeout))
	// Background context: exec watches nothing; the goroutine at the end
	// kills the process group at the deadline.
	cmd, err := s.command(context.Background(), spec)
	if err != nil {
		cancel()
		return nil, err
	}
	p := &Proc{Name: name, Args: spec.Args, cmd: cmd, out: excerpt.NewTail(spec.Keep), done: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	var stderr io.ReadCloser = io.NopCloser(strings.NewReader(""))
	if spec.StderrFile != "" {
		f, err := os.OpenFile(spec.StderrFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			cancel()
			return nil, err
		}
		defer f.Close() // the child has its own descriptor once started
		cmd.Stderr = f
	} else if stderr, err = cmd.StderrPipe(); err != nil {
		cancel()
		return nil, err
	}
	if spec.RawStdout {
		p.rawStdout = stdout
		stdout = io.NopCloser(strings.NewReader(""))
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		cancel()
		return nil, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s.started(cmd)
	p.ID, _ = backstop.Identify(cmd.Process.Pid)
	var readers sync.WaitGroup
	readers.Add(2)
	go p.read("stdout", stdout, &readers)
	go p.read("stderr", stderr, &readers)
	go func() {
		defer cancel()
		defer close(p.done)
		state, err := cmd.Process.Wait()
		// A grandchild may hold the pipes open; give readers pipeDelay, then
		// close our ends so the readers end.
		drained := make(chan struct{})
		go func() { readers.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(pipeDelay):
			stdout.Close()
			stderr.Close()
			<-drained
		}
		backstop.Disown(cmd.Process.Pid)
		p.res = Result{Args: spec.Args, Duration: time.Since(start), Output: p.out.String(), Total: p.out.Total(), RC: -1, Err: err}
		if state != nil {
			p.res.RC = state.ExitCode()
			if p.res.RC < 0 {
				p.res.RC = 128 + int(state.Sys().(syscall.WaitStatus).Signal())
			}
		}
		if ctx.Err() == context.DeadlineExceeded {
			p.res.TimedOut, p.res.RC = true, TimeoutRC
		}
	}()
	// cmd.Wait is never called: the goroutine above waits for the process
	// itself so that it, not exec, decides when to stop reading the pipes.
	go func() {
		<-ctx.Done()
		select {
		case <-p.done:
		default:
			_ = cmd.Cancel()
		}
	}()
	return p, nil
}

func (p *Proc) read(stream string, r io.Reader, wg *sync.WaitGroup) {
	defer wg.Done()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			_, _ = p.out.Write([]byte(line))
			p.mu.Lock()
			p.lines = append(p.lines, Line{Stream: stream, Text: strings.TrimRight(line, "\r\n")})
			if len(p.lines) > maxLines {
				drop := len(p.lines) - maxLines
				p.lines = append(p.lines[:0:0], p.lines[drop:]...)
				p.dropped += drop
			}
			p.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// Stdout is the process's standard output when it was started with
// RawStdout; nil otherwise.
func (p *Proc) Stdout() io.ReadCloser { return p.rawStdout }

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Send writes text to the process's stdin.
func (p *Proc) Send(text string) error {
	_, err := io.WriteString(p.stdin, text)
	return err
}

// Stdin is the process's standard input.
func (p *Proc) Stdin() io.WriteCloser { return p.stdin }

// CloseStdin closes the process's standard input (EOF for the process).
func (p *Proc) CloseStdin() error { return p.stdin.Close() }

// Output is the tail of what the process printed so far.
func (p *Proc) Output() string { return p.out.String() }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// WaitLine waits for a line (stdout or stderr, stream "" for either)
// matching re, after the last line an earlier WaitLine matched.
func (p *Proc) WaitLine(stream string, re *regexp.Regexp, timeout time.Duration) (Line, error) {
	var found Line
	what := fmt.Sprintf("%s to print a line matching %q", p.Name, re.String())
	if stream != "" {
		what = fmt.Sprintf("%s to print a %s line matching %q", p.Name, stream, re.String())
	}
	err := wait.For(context.Background(), what, timeout, 10*time.Millisecond, func() wait.Result {
		exited := p.Exited() // read before the lines: a line printed before exit is seen
		p.mu.Lock()
		defer p.mu.Unlock()
		i := max(p.cursor-p.dropped, 0)
		for ; i < len(p.lines); i++ {
			l := p.lines[i]
			if (stream == "" || l.Stream == stream) && re.MatchString(l.Text) {
				found = l
				p.cursor = p.dropped + i + 1
				return wait.Done()
			}
		}
		last := "(no output)"
		if n := len(p.lines); n > 0 {
			last = fmt.Sprintf("%q", p.lines[n-1].Text)
		}
		if exited {
			return wait.Fail(fmt.Errorf("%s exited (rc %d) before printing a line matching %q; last line %s", p.Name, p.res.RC, re.String(), last))
		}
		return wait.Continue("last line %s", last)
	})
	return found, err
}

// Signal sends sig to the process if it still runs.
func (p *Proc) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return fmt.Errorf("%s has exited", p.Name)
	}
	return backstop.Signal(p.ID, sig)
}

// Wait waits up to timeout for the process to end and returns its result.
func (p *Proc) Wait(timeout time.Duration) (Result, error) {
	select {
	case <-p.done:
		return p.res, nil
	case <-time.After(timeout):
		return Result{Args: p.Args, RC: -1, Output: p.out.String(), Total: p.out.Total()},
			fmt.Errorf("timed out after %s waiting for %s (pid %d) to exit", timeout, p.Name, p.Pid())
	}
}
