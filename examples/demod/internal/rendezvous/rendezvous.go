// Package rendezvous is how clients find the one daemon of a runtime dir:
// a socket that answers, guarded by a lock the live daemon holds for its
// whole life, and a spawn lock that lets exactly one cold client start it.
package rendezvous

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reproboard/reproboard/examples/demod/internal/wire"
)

// Paths are the rendezvous files, all directly in the runtime dir so the
// socket path stays well under the 104-byte sun_path limit.
type Paths struct {
	Dir       string
	Socket    string // the daemon answers here
	Lock      string // flocked by the live daemon, for its whole life
	SpawnLock string // flocked by the one client that is starting a daemon
	PIDFile   string // "pid mode"; informational only, never trusted without Lock
}

// For returns the rendezvous paths under runtime dir dir.
func For(dir string) Paths {
	return Paths{
		Dir:       dir,
		Socket:    filepath.Join(dir, "demod.sock"),
		Lock:      filepath.Join(dir, "demod.lock"),
		SpawnLock: filepath.Join(dir, "spawn.lock"),
		PIDFile:   filepath.Join(dir, "demod.pid"),
	}
}

// Lock is a held flock; the kernel drops it when the holder dies, which is
// what makes a kill -9 detectable.
type Lock struct{ f *os.File }

// TryLock takes an exclusive flock on path without waiting.
func TryLock(path string) (*Lock, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("flock %s: %w", path, err)
	}
	return &Lock{f: f}, true, nil
}

// AcquireLock polls TryLock until timeout; giveUp, if non-nil, may end the
// wait early (for example because the thing the lock guards appeared).
func AcquireLock(path string, timeout time.Duration, giveUp func() bool) (*Lock, error) {
	deadline := time.Now().Add(timeout)
	for {
		l, ok, err := TryLock(path)
		if err != nil {
			return nil, err
		}
		if ok {
			return l, nil
		}
		if giveUp != nil && giveUp() {
			return nil, errGaveUp
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("timed out after %s waiting for the lock %s (another process still holds it)", timeout, path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var errGaveUp = errors.New("gave up waiting for the lock")

// IsGaveUp reports whether AcquireLock ended because giveUp said so.
func IsGaveUp(err error) bool { return errors.Is(err, errGaveUp) }

// Release drops the lock.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}

// Status asks the daemon who it is. An error means nobody answered.
func Status(p Paths) (wire.Response, error) {
	c, err := wire.Dial(p.Socket, time.Second)
	if err != nil {
		return wire.Response{}, err
	}
	defer c.Close()
	return c.Call(wire.Request{Op: wire.OpStatus}, 5*time.Second)
}

// LockHeld reports whether some process holds the daemon lock right now.
func LockHeld(p Paths) bool {
	l, ok, err := TryLock(p.Lock)
	if err != nil {
		return false
	}
	if ok {
		l.Release()
	}
	return !ok
}

// ClearStale removes the socket and pid file of a daemon that died without
// cleaning up (kill -9). They are only removed while holding the daemon
// lock, so a live daemon's files are never touched.
func ClearStale(p Paths) bool {
	l, ok, err := TryLock(p.Lock)
	if err != nil || !ok {
		return false
	}
	defer l.Release()
	removed := false
	for _, f := range []string{p.Socket, p.PIDFile} {
		if os.Remove(f) == nil {
			removed = true
		}
	}
	return removed
}

// WritePIDFile records the daemon's pid and mode for diagnostics.
func WritePIDFile(p Paths, pid int, mode string) error {
	tmp := p.PIDFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%d %s\n", pid, mode)), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p.PIDFile)
}

// ReadPIDFile returns what the pid file says, which may be a dead daemon.
func ReadPIDFile(p Paths) (pid int, mode string, ok bool) {
	b, err := os.ReadFile(p.PIDFile)
	if err != nil {
		return 0, "", false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, "", false
	}
	pid, err = strconv.Atoi(f[0])
	return pid, f[1], err == nil
}

// Timeouts of the cold path. The spawn wait covers another client's whole
// spawn (its own answer wait plus slack).
const (
	SpawnLockWait = 15 * time.Second
	AnswerWait    = 10 * time.Second
)

// Ensure returns the status of the running daemon, starting one with
// spawn when none answers. Racing cold clients serialize on the spawn
// lock and re-check under it, so exactly one of them spawns.
func Ensure(p Paths, spawn func() (*exec.Cmd, error)) (st wire.Response, spawned bool, err error) {
	if st, err := Status(p); err == nil {
		return st, false, nil
	}
	sl, err := AcquireLock(p.SpawnLock, SpawnLockWait, nil)
	if err != nil {
		return st, false, fmt.Errorf("starting the demod daemon: %w", err)
	}
	defer sl.Release()
	if st, err := Status(p); err == nil {
		return st, false, nil
	}
	ClearStale(p)
	cmd, err := spawn()
	if err != nil {
		return st, false, fmt.Errorf("starting the demod daemon: %w", err)
	}
	exited := make(chan error, 1)
	// Reap the child if it dies while we wait, and learn that it did.
	go func() { exited <- cmd.Wait() }()
	st, err = WaitAnswer(p, AnswerWait, exited)
	if err != nil {
		return st, false, fmt.Errorf("started the demod daemon (pid %d) but %w", cmd.Process.Pid, err)
	}
	return st, true, nil
}

// WaitAnswer polls the socket until the daemon answers, the spawned child
// exits, or timeout passes; the error says which and what was seen last.
func WaitAnswer(p Paths, timeout time.Duration, exited <-chan error) (wire.Response, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		st, err := Status(p)
		if err == nil {
			return st, nil
		}
		last = err
		select {
		case werr := <-exited:
			// The child may have lost a race to a daemon that answers now.
			if st, err := Status(p); err == nil {
				return st, nil
			}
			return st, fmt.Errorf("it exited (%v) before answering on %s", werr, p.Socket)
		default:
		}
		if time.Now().After(deadline) {
			return wire.Response{}, fmt.Errorf("it did not answer on %s within %s; last error: %v", p.Socket, timeout, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Detach configures cmd to run as a daemon: its own session (so it
// survives the client and its terminal), the caller's environment (the test
// harness marks processes by an env var), no stdin, output to logFile.
func Detach(cmd *exec.Cmd, logFile *os.File) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Env = os.Environ()
	cmd.Stdin = nil
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Dir = "/"
}
