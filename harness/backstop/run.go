package backstop

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// RunLockVar is inherited, next to MarkerVar, by every process a run
// starts: the absolute path of the run's lock file. A sweep kills a marked
// process only when that very lock is provably not held, so a run never
// touches the processes of another live run, whatever base either uses.
const RunLockVar = "REPROBOARD_RUN_LOCK"

// runPrefix names a run's directory under the base, <base>/rb-<id>, and
// its lock file beside it, <base>/rb-<id>.lock.
const runPrefix = "rb-"

// Run is one harness process's claim on its sections: a directory under
// the base holding the section roots, and a lock file held (flock) for as
// long as the harness lives. The kernel drops the lock when the harness
// dies, however it dies, which is how a later run tells residue from a
// live run.
type Run struct {
	ID       string
	Dir      string
	LockPath string
	lock     *os.File
}

// StartRun sweeps the residue of dead runs, then creates and locks a new
// run under base.
func StartRun(base string) (*Run, SweepReport, error) {
	sweep, err := Sweep(base)
	if err != nil {
		return nil, sweep, err
	}
	var raw [4]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, sweep, err
	}
	id := hex.EncodeToString(raw[:])
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, sweep, fmt.Errorf("run base %s: %w", base, err)
	}
	// The lock is taken under a temporary name and renamed into place
	// locked, and the directory made after: a concurrent sweep never sees
	// this run's lock unheld, nor its directory without a lock.
	f, err := os.CreateTemp(base, ".rb-lock-*")
	if err != nil {
		return nil, sweep, fmt.Errorf("run lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, sweep, fmt.Errorf("run lock %s: %w", f.Name(), err)
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	r := &Run{ID: id, Dir: filepath.Join(base, runPrefix+id), LockPath: filepath.Join(base, runPrefix+id+".lock"), lock: f}
	if err := os.Rename(f.Name(), r.LockPath); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, sweep, fmt.Errorf("run lock: %w", err)
	}
	if r.LockPath, err = filepath.Abs(r.LockPath); err != nil {
		return nil, sweep, err
	}
	if err := os.Mkdir(r.Dir, 0o700); err != nil {
		r.release()
		return nil, sweep, fmt.Errorf("run directory: %w", err)
	}
	return r, sweep, nil
}

// Marker is the marker value for a section of this run.
func (r *Run) Marker(section string) string { return r.ID + "/" + section }

// Close stops whatever still carries this run's marker, removes the run
// directory (unless keep), and releases the lock.
func (r *Run) Close(keep bool) Report {
	procs, _ := Marked(func(m string) bool { return runOf(m) == r.ID })
	rep := Stop(procs, DefaultGrace)
	if !keep {
		os.RemoveAll(r.Dir)
	}
	r.release()
	return rep
}

func (r *Run) release() {
	os.Remove(r.LockPath)
	r.lock.Close()
}

// SweepReport says what a sweep cleared.
type SweepReport struct {
	Runs    []string // dead runs whose directories were removed
	Stopped Report
}

// Sweep kills every process whose run lock (RunLockVar) is no longer held
// (a harness killed by SIGKILL, a `go test -timeout` panic), wherever that
// run lived, and removes the directories of dead runs under base.
func Sweep(base string) (SweepReport, error) {
	var rep SweepReport
	procs, err := withDeadRunLock()
	if err != nil {
		return rep, err
	}
	rep.Stopped = Stop(procs, DefaultGrace)
	dirs, _ := filepath.Glob(filepath.Join(base, runPrefix+"*"))
	for _, d := range dirs {
		id := strings.TrimPrefix(filepath.Base(d), runPrefix)
		if runOf(id+"/x") == "" {
			continue // a lock file, or not ours
		}
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
			continue
		}
		lock := d + ".lock"
		if held(lock) {
			continue
		}
		if err := os.RemoveAll(d); err == nil || errors.Is(err, os.ErrNotExist) {
			os.Remove(lock)
			rep.Runs = append(rep.Runs, id)
		}
	}
	return rep, nil
}

// withDeadRunLock lists the marked processes whose run lock is not held.
// A marked process without a lock variable is left alone: nothing proves
// its run is dead.
func withDeadRunLock() ([]Proc, error) {
	all, err := pids()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	verdict := map[string]bool{} // lock path -> held
	var out []Proc
	for _, pid := range all {
		if pid == self {
			continue
		}
		env := environOf(pid)
		if _, marked := env[MarkerVar]; !marked {
			continue
		}
		lock := env[RunLockVar]
		if lock == "" {
			continue
		}
		h, ok := verdict[lock]
		if !ok {
			h = held(lock)
			verdict[lock] = h
		}
		if h {
			continue
		}
		if p, err := Identify(pid); err == nil && p.Alive() {
			out = append(out, p)
		}
	}
	return out, nil
}

// held reports whether some live process holds the lock at path. A
// missing lock file means no run holds it.
func held(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return false
	}
	return errors.Is(err, unix.EWOULDBLOCK)
}

func runOf(marker string) string {
	id, _, ok := strings.Cut(marker, "/")
	if !ok || len(id) != 8 {
		return ""
	}
	if _, err := hex.DecodeString(id); err != nil {
		return ""
	}
	return id
}
