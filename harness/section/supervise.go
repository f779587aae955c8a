package section

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/reproboard/reproboard/harness/backstop"
)

// superviseEnv turns any binary that links this package (a test binary
// re-executed by the section) into a supervisor before its tests or main
// run: "1" supervises the command in its arguments, "probe" only checks
// that it could. The supervisor removes the variable from what it runs.
const superviseEnv = backstop.SupervisorVar

func init() {
	switch os.Getenv(superviseEnv) {
	case "":
	case "probe":
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			os.Exit(3)
		}
		os.Exit(0)
	default:
		os.Exit(supervise(os.Args[1:]))
	}
}

// statusFD is the supervisor's report pipe: "pid N" once the command runs,
// then "exit STATUS" (the raw wait status) when it ends, or "error MSG".
const statusFD = 3

// supervise is the supervisor: child subreaper for one command of a
// section, so every process that command leaves behind, however it
// detached (double fork, setsid, a cleared or overwritten environment), is
// reparented to it and stays in its tree. It lets go of the command's
// standard streams at once (a wait for them must not wait for it), reports
// the command's pid and exit status on statusFD, and reaps the tree until
// it is empty: those orphans belong to this section, and only their own
// supervisor ever waits for them. SIGTERM, SIGINT and SIGHUP are caught
// and dropped: it ends when its tree does (SIGKILL still ends it).
func supervise(argv []string) int {
	status := os.NewFile(statusFD, "supervisor-status")
	unix.CloseOnExec(statusFD)
	report := func(format string, args ...any) {
		fmt.Fprintf(status, format+"\n", args...)
	}
	if len(argv) == 0 {
		report("error supervisor: no command")
		return 127
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		report("error supervisor: PR_SET_CHILD_SUBREAPER: %v", err)
		return 127
	}
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, superviseEnv+"=") {
			env = append(env, kv)
		}
	}
	proc, err := os.StartProcess(argv[0], argv, &os.ProcAttr{
		Env:   env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		// Its own process group, as an unsupervised command has: a
		// timeout kills the group.
		Sys: &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		report("error %v", err)
		return 127
	}
	report("pid %d", proc.Pid)
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for fd := 0; fd < 3; fd++ {
			_ = unix.Dup2(int(null.Fd()), fd)
		}
		null.Close()
	}
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0 // ECHILD: the tree is empty
		}
		if pid == proc.Pid {
			report("exit %d", uint32(ws))
			status.Close()
		}
	}
}

// started is a command of the section, supervised or not.
type started struct {
	pid        int
	supervisor *exec.Cmd     // nil unless the isolation is subreaper
	supDone    chan struct{} // the supervisor was waited for
	done       chan struct{} // the command ended (status, err are set)
	status     syscall.WaitStatus
	err        error
}

// rc turns the wait status into an exit code: 128+N for signal N, -1
// when the status never came.
func (l *started) rc() int {
	switch {
	case l.err != nil:
		return -1
	case l.status.Signaled():
		return 128 + int(l.status.Signal())
	}
	return l.status.ExitStatus()
}

// killGroup kills the command's process group.
func (l *started) killGroup() { _ = syscall.Kill(-l.pid, syscall.SIGKILL) }

// launch starts argv with the given standard files under the section's
// isolation: into the section's cgroup, under a supervisor, or plain.
func (s *Section) launch(argv, env []string, dir string, stdin, stdout, stderr *os.File) (*started, error) {
	path := argv[0]
	if !strings.ContainsRune(path, '/') {
		p, err := exec.LookPath(path)
		if err != nil {
			return nil, err
		}
		path = p
	}
	l := &started{done: make(chan struct{})}
	if s.isolation == backstop.IsolationSubreaper {
		return l, s.launchSupervised(l, append([]string{path}, argv[1:]...), env, dir, stdin, stdout, stderr)
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Dir: dir, Stdin: stdin, Stdout: stdout, Stderr: stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if s.cgroupFD != nil {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(s.cgroupFD.Fd())
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	l.pid = cmd.Process.Pid
	s.recordStart(l.pid)
	go func() {
		defer close(l.done)
		err := cmd.Wait()
		if cmd.ProcessState != nil {
			l.status = cmd.ProcessState.Sys().(syscall.WaitStatus)
		} else {
			l.err = err
		}
	}()
	return l, nil
}

func (s *Section) launchSupervised(l *started, argv, env []string, dir string, stdin, stdout, stderr *os.File) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	sup := &exec.Cmd{Path: s.exe, Args: append([]string{s.exe}, argv...), Env: append(env, superviseEnv+"=1"), Dir: dir,
		Stdin: stdin, Stdout: stdout, Stderr: stderr, ExtraFiles: []*os.File{w}}
	err = sup.Start()
	w.Close()
	if err != nil {
		r.Close()
		return fmt.Errorf("start the supervisor of %s: %w", argv[0], err)
	}
	l.supervisor, l.supDone = sup, make(chan struct{})
	if id, err := backstop.Identify(sup.Process.Pid); err == nil {
		s.run.Record(id)
		s.mu.Lock()
		s.supervisors = append(s.supervisors, l)
		s.mu.Unlock()
	}
	go func() { _ = sup.Wait(); close(l.supDone) }()
	br := bufio.NewReader(r)
	line, _ := br.ReadString('\n')
	if msg, ok := strings.CutPrefix(line, "error "); ok {
		r.Close()
		<-l.supDone
		return errors.New(strings.TrimSpace(msg))
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	if err != nil {
		r.Close()
		_ = sup.Process.Kill()
		<-l.supDone
		return fmt.Errorf("the supervisor of %s said %q, not its pid", argv[0], line)
	}
	l.pid = pid
	s.recordStart(pid)
	go func() {
		defer close(l.done)
		defer r.Close()
		line, _ := br.ReadString('\n')
		n, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(line, "exit ")), 10, 32)
		if err != nil {
			l.err = fmt.Errorf("the supervisor of %s ended without its exit status (%q)", argv[0], line)
			return
		}
		l.status = syscall.WaitStatus(n)
	}()
	return nil
}
