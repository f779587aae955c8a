package section

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

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

// cmdEnv and cmdDir are a command's environment and working directory.
func (s *Section) cmdEnv(spec Spec) []string { return append(s.Env(), spec.Env...) }

func (s *Section) cmdDir(spec Spec) string {
	if spec.Dir == "" {
		return s.Root
	}
	return spec.Dir
}

func (s *Section) timeout(d time.Duration) time.Duration {
	if d <= 0 || d > s.Remaining() {
		d = s.Remaining()
	}
	return max(d, time.Millisecond)
}

// recordStart puts a started command under the backstop, and its identity
// in the run directory for a sweep after this harness died.
func (s *Section) recordStart(pid int) {
	if p, err := backstop.Identify(pid); err == nil {
		s.run.Record(p)
	}
	_ = s.Record(pid)
}

// stdinFile is what a command reads: data through a pipe, or /dev/null.
func stdinFile(data []byte) (child, parent *os.File, err error) {
	if data == nil {
		f, err := os.Open(os.DevNull)
		return f, nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	go func() {
		_, _ = w.Write(data)
		w.Close()
	}()
	return r, nil, nil
}

// drain waits for the readers of a finished command's pipes. A grandchild
// may hold them open: once a pipeDelay passes with nothing left unread in
// them, the read ends are closed and the readers end. Output still
// waiting to be read (a reader slow on a loaded machine) is waited for, up
// to ten pipeDelays in all.
func drain(readers *sync.WaitGroup, ends ...io.Closer) {
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	giveUp := time.Now().Add(10 * pipeDelay)
	for {
		select {
		case <-drained:
			return
		case <-time.After(pipeDelay):
		}
		if time.Now().Before(giveUp) && unread(ends) {
			continue
		}
		for _, e := range ends {
			e.Close()
		}
		<-drained
		return
	}
}

// unread reports whether any of the pipes holds bytes not read yet.
func unread(ends []io.Closer) bool {
	for _, e := range ends {
		f, ok := e.(*os.File)
		if !ok {
			continue
		}
		rc, err := f.SyscallConn()
		if err != nil {
			continue
		}
		n := 0
		_ = rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
		if n > 0 {
			return true
		}
	}
	return false
}

// Run runs a command to its end or its timeout. A timeout gives RC 124,
// the partial output, and a last line "[timed out after Ns]". Output is
// kept as a bounded tail whatever the command prints.
func (s *Section) Run(spec Spec) Result {
	d := s.timeout(spec.Timeout)
	res := Result{Args: spec.Args, RC: -1}
	if len(spec.Args) == 0 {
		res.Err = errors.New("no command")
		return res
	}
	out, stdout, stderr := excerpt.NewTail(spec.Keep), excerpt.NewTail(spec.Keep), excerpt.NewTail(spec.Keep)
	in, _, err := stdinFile(spec.Stdin)
	if err != nil {
		res.Err = err
		return res
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		in.Close()
		res.Err = err
		return res
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		in.Close()
		outR.Close()
		outW.Close()
		res.Err = err
		return res
	}
	start := time.Now()
	l, err := s.launch(spec.Args, s.cmdEnv(spec), s.cmdDir(spec), in, outW, errW)
	in.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		res.Err = err
		res.Output = err.Error()
		return res
	}
	var readers sync.WaitGroup
	readers.Add(2)
	copyTo := func(w io.Writer, r io.Reader) {
		defer readers.Done()
		_, _ = io.Copy(w, r)
	}
	go copyTo(io.MultiWriter(out, stdout), outR)
	go copyTo(io.MultiWriter(out, stderr), errR)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-l.done:
	case <-timer.C:
		res.TimedOut = true
		l.killGroup()
		<-l.done
	}
	drain(&readers, outR, errR)
	outR.Close()
	errR.Close()
	res.Duration = time.Since(start)
	res.Total = out.Total()
	res.Output, res.Stdout, res.Stderr = out.String(), stdout.String(), stderr.String()
	switch {
	case res.TimedOut:
		res.RC = TimeoutRC
		res.Err = fmt.Errorf("timed out after %s", d.Round(time.Millisecond))
		res.Output = strings.TrimSuffix(res.Output, "\n") + fmt.Sprintf("\n[timed out after %gs]", d.Round(time.Millisecond).Seconds())
	case l.err != nil:
		res.Err = l.err
	default:
		res.RC = l.rc()
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

	l     *started
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
	if len(spec.Args) == 0 {
		return nil, errors.New("no command")
	}
	d := s.timeout(spec.Timeout)
	p := &Proc{Name: name, Args: spec.Args, out: excerpt.NewTail(spec.Keep), done: make(chan struct{})}
	var parentEnds, childEnds []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err == nil {
			parentEnds, childEnds = append(parentEnds, r), append(childEnds, w)
		}
		return
	}
	fail := func(err error) (*Proc, error) {
		closeAll(parentEnds)
		closeAll(childEnds)
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	parentEnds, childEnds = append(parentEnds, inW), append(childEnds, inR)
	p.stdin = inW
	outR, outW, err := pipe()
	if err != nil {
		return fail(err)
	}
	var stdout io.ReadCloser = outR
	var stderr io.ReadCloser = io.NopCloser(strings.NewReader(""))
	var errW *os.File
	if spec.StderrFile != "" {
		if errW, err = os.OpenFile(spec.StderrFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
			return fail(err)
		}
		childEnds = append(childEnds, errW)
	} else {
		var errR *os.File
		if errR, errW, err = pipe(); err != nil {
			return fail(err)
		}
		stderr = errR
	}
	if spec.RawStdout {
		p.rawStdout = outR
		stdout = io.NopCloser(strings.NewReader(""))
	}
	start := time.Now()
	l, err := s.launch(spec.Args, s.cmdEnv(spec), s.cmdDir(spec), inR, outW, errW)
	if err != nil {
		return fail(fmt.Errorf("start %s: %w", name, err))
	}
	closeAll(childEnds) // the child has its own descriptors now
	p.l = l
	p.ID, _ = backstop.Identify(l.pid)
	var readers sync.WaitGroup
	readers.Add(2)
	go p.read("stdout", stdout, &readers)
	go p.read("stderr", stderr, &readers)
	timer := time.NewTimer(d)
	go func() {
		defer close(p.done)
		timedOut := false
		select {
		case <-l.done:
		case <-timer.C:
			timedOut = true
			l.killGroup()
			<-l.done
		}
		timer.Stop()
		drain(&readers, stdout, stderr)
		if !spec.RawStdout {
			stdout.Close()
		}
		stderr.Close()
		inW.Close()
		p.res = Result{Args: spec.Args, Duration: time.Since(start), Output: p.out.String(), Total: p.out.Total(), RC: l.rc(), Err: l.err}
		if timedOut {
			p.res.TimedOut, p.res.RC = true, TimeoutRC
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
func (p *Proc) Pid() int { return p.l.pid }

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
