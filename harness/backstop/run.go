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

// runPrefix names a run's directory under the base: <base>/rb-<id>.
const runPrefix = "rb-"

// Run is one harness process's claim on its sections: a directory under the
// base holding the section roots, and a lock file held (flock) for as long
// as the harness lives. The kernel drops the lock when the harness dies,
// however it dies, which is how a later run tells residue from a live run.
type Run struct {
	ID   string
	Dir  string
	lock *os.File
}

// StartRun sweeps the residue of dead runs under base, then creates and
// locks a new run.
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
	dir := filepath.Join(base, runPrefix+id)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, sweep, fmt.Errorf("run base %s: %w", base, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, sweep, fmt.Errorf("run directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, sweep, fmt.Errorf("run lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, sweep, fmt.Errorf("run lock %s: %w", f.Name(), err)
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return &Run{ID: id, Dir: dir, lock: f}, sweep, nil
}

// Marker is the marker value for a section of this run.
func (r *Run) Marker(section string) string { return r.ID + "/" + section }

// Close stops whatever still carries this run's marker, releases the lock
// and removes the run directory (unless keep).
func (r *Run) Close(keep bool) Report {
	procs, _ := Marked(func(m string) bool { return runOf(m) == r.ID })
	rep := Stop(procs, DefaultGrace)
	r.lock.Close()
	if !keep {
		os.RemoveAll(r.Dir)
	}
	return rep
}

// SweepReport says what a sweep cleared.
type SweepReport struct {
	Runs    []string // dead runs whose residue was cleared
	Stopped Report
}

// Sweep kills every process whose marker names a run whose lock is no
// longer held (a harness killed by SIGKILL, a `go test -timeout` panic) and
// removes those runs' directories.
func Sweep(base string) (SweepReport, error) {
	var rep SweepReport
	dead := map[string]bool{}
	live := map[string]bool{}
	isDead := func(id string) bool {
		if dead[id] {
			return true
		}
		if live[id] {
			return false
		}
		if runHeld(filepath.Join(base, runPrefix+id, "lock")) {
			live[id] = true
			return false
		}
		dead[id] = true
		return true
	}
	procs, err := Marked(func(m string) bool { id := runOf(m); return id != "" && isDead(id) })
	if err != nil {
		return rep, err
	}
	rep.Stopped = Stop(procs, DefaultGrace)
	dirs, _ := filepath.Glob(filepath.Join(base, runPrefix+"*"))
	for _, d := range dirs {
		id := strings.TrimPrefix(filepath.Base(d), runPrefix)
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
			continue
		}
		if isDead(id) {
			dead[id] = true
		}
	}
	for id := range dead {
		dir := filepath.Join(base, runPrefix+id)
		if !safeRunDir(base, dir) {
			continue
		}
		if err := os.RemoveAll(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			rep.Runs = append(rep.Runs, id)
		}
	}
	return rep, nil
}

// runHeld reports whether some live process holds the lock at path. A
// missing lock file means no run holds it.
func runHeld(path string) bool {
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

// safeRunDir refuses to remove anything that is not a direct rb-<hex>
// child of base.
func safeRunDir(base, dir string) bool {
	if filepath.Dir(dir) != filepath.Clean(base) {
		return false
	}
	return runOf(strings.TrimPrefix(filepath.Base(dir), runPrefix)+"/x") != ""
}
