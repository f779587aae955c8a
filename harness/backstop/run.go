package backstop

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
// live run. What the supervision knows is written to the run directory
// too (the run's cgroup, the supervisors' and commands' pids with their
// start times), so a later sweep finds processes that no longer carry the
// marker.
type Run struct {
	ID       string
	Dir      string
	LockPath string
	// Isolation is cgroup when Cgroup is set; the section package lowers
	// it, or raises marker to subreaper where it can supervise.
	Isolation Isolation
	Cgroup    *Cgroup
	lock      *os.File
	recMu     sync.Mutex
}

// Files in a run directory.
const (
	cgroupFile = "cgroup" // the run's cgroup path
	procsFile  = "procs"  // "pid start" per line: supervisors and commands
	keepFile   = "keep"   // REPROBOARD_KEEP: no sweep removes this run
)

// StartRun sweeps the residue of dead runs, then creates and locks a new
// run under base with the strongest isolation IsolationEnv allows.
func StartRun(base string) (*Run, SweepReport, error) {
	max, err := MaxIsolation()
	if err != nil {
		return nil, SweepReport{}, err
	}
	return StartRunWith(base, max)
}

// StartRunWith is StartRun with the strongest isolation to try given.
func StartRunWith(base string, max Isolation) (*Run, SweepReport, error) {
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
	r := &Run{ID: id, Dir: filepath.Join(base, runPrefix+id), LockPath: filepath.Join(base, runPrefix+id+".lock"), lock: f, Isolation: IsolationMarker}
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
	if max == IsolationCgroup {
		if cg, err := newRunCgroup(id); err == nil {
			if err := os.WriteFile(filepath.Join(r.Dir, cgroupFile), []byte(cg.Path+"\n"), 0o600); err != nil {
				cg.Remove()
			} else {
				r.Cgroup, r.Isolation = cg, IsolationCgroup
			}
		}
	}
	return r, sweep, nil
}

// DropCgroup gives up the run's cgroup (a probe start into it failed):
// the run falls back to the next level.
func (r *Run) DropCgroup() {
	if r.Cgroup == nil {
		return
	}
	r.Cgroup.Remove()
	os.Remove(filepath.Join(r.Dir, cgroupFile))
	r.Cgroup, r.Isolation = nil, IsolationMarker
}

// Record writes p's identity to the run directory, for a sweep after this
// harness died: a supervisor's whole tree, or a command, is found by it
// even when nothing in it carries the marker any more.
func (r *Run) Record(p Proc) {
	r.recMu.Lock()
	defer r.recMu.Unlock()
	f, err := os.OpenFile(filepath.Join(r.Dir, procsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%d %d\n", p.Pid, p.Start)
	f.Close()
}

// Keep marks the run directory as kept: sweeps stop its processes but
// leave its section roots for the user to look at and remove.
func (r *Run) Keep() error {
	return os.WriteFile(filepath.Join(r.Dir, keepFile), []byte("REPROBOARD_KEEP: remove this directory when done\n"), 0o600)
}

// Marker is the marker value for a section of this run.
func (r *Run) Marker(section string) string { return r.ID + "/" + section }

// Close stops whatever of this run still runs (its cgroup, the trees of
// its recorded processes, what carries its marker), removes its cgroups,
// removes the run directory (unless keep, or something survived), and
// releases the lock.
func (r *Run) Close(keep bool) Report {
	rep := stopRunDir(r.Dir, r.ID)
	if keep {
		_ = r.Keep()
	} else if len(rep.Survivors) == 0 {
		os.RemoveAll(r.Dir)
	}
	r.release()
	return rep
}

// stopRunDir stops every process a run directory's records lead to, and
// the processes carrying the run's marker, then removes its cgroup.
func stopRunDir(dir, id string) Report {
	var procs []Proc
	var cg *Cgroup
	if b, err := os.ReadFile(filepath.Join(dir, cgroupFile)); err == nil {
		if p := strings.TrimSpace(string(b)); p != "" && strings.HasPrefix(filepath.Base(p), runPrefix) {
			cg = &Cgroup{Path: p}
			procs = append(procs, cg.Procs()...)
		}
	}
	recorded := readProcs(filepath.Join(dir, procsFile))
	procs = append(procs, Descendants(recorded)...)
	procs = append(procs, recorded...)
	marked, _ := Marked(func(m string) bool { return runOf(m) == id })
	procs = append(procs, marked...)
	rep := Stop(procs, DefaultGrace)
	if cg != nil {
		// What forked while it was being stopped, or hid from the list.
		rep.Survivors = append(rep.Survivors, cg.Kill(killWait)...)
	}
	return rep
}

func readProcs(path string) []Proc {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []Proc
	for _, line := range strings.Split(string(b), "\n") {
		var p Proc
		if _, err := fmt.Sscanf(line, "%d %d", &p.Pid, &p.Start); err == nil && p.Same() {
			p.Cmd = cmdline(p.Pid)
			out = append(out, p)
		}
	}
	return out
}

func (r *Run) release() {
	os.Remove(r.LockPath)
	r.lock.Close()
}

// RunSweep is what a sweep did for one dead run.
type RunSweep struct {
	ID      string
	Dir     string // "" when the run lived under another base
	Stopped Report
	Removed bool // its directory (section roots) was removed
	Kept    bool // kept with REPROBOARD_KEEP: left for the user
}

func (s RunSweep) String() string {
	var parts []string
	if st := s.Stopped.Stopped(); len(st) > 0 {
		var ps []string
		for _, p := range st {
			ps = append(ps, p.String())
		}
		parts = append(parts, "stopped "+strings.Join(ps, ", "))
	}
	if len(s.Stopped.Survivors) > 0 {
		parts = append(parts, fmt.Sprintf("could NOT stop %d process(es)", len(s.Stopped.Survivors)))
	}
	switch {
	case s.Removed:
		parts = append(parts, "removed "+s.Dir)
	case s.Kept:
		parts = append(parts, "kept "+s.Dir+" (REPROBOARD_KEEP; rm -rf it when done)")
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing left")
	}
	return "swept dead run " + s.ID + ": " + strings.Join(parts, "; ")
}

// SweepReport says what a sweep cleared.
type SweepReport struct {
	Runs    []string // dead runs whose directories were removed
	Stopped Report   // every process stopped
	Each    []RunSweep
}

// Lines is one line per dead run the sweep cleaned.
func (s SweepReport) Lines() []string {
	var out []string
	for _, r := range s.Each {
		out = append(out, r.String())
	}
	return out
}

// Sweep kills every process whose run lock (RunLockVar) is no longer held
// (a harness killed by SIGKILL, a `go test -timeout` panic), wherever that
// run lived; for the dead runs under base it also stops what their records
// lead to (the run's cgroup, the trees of their supervisors), which finds
// processes that cleared or overwrote their environment. Then it removes
// the dead runs' directories, except those kept with REPROBOARD_KEEP.
func Sweep(base string) (SweepReport, error) {
	var rep SweepReport
	procs, err := withDeadRunLock()
	if err != nil {
		return rep, err
	}
	byRun := map[string]*RunSweep{}
	var order []string
	entry := func(id string) *RunSweep {
		if e, ok := byRun[id]; ok {
			return e
		}
		e := &RunSweep{ID: id}
		byRun[id] = e
		order = append(order, id)
		return e
	}
	runOfPid := map[int]string{}
	for _, p := range procs {
		if m, ok := markerOf(p.Pid); ok {
			runOfPid[p.Pid] = runOf(m)
			entry(runOf(m))
		}
	}
	rep.Stopped = Stop(procs, DefaultGrace)
	for _, list := range [][]Proc{rep.Stopped.Terminated, rep.Stopped.Killed, rep.Stopped.Survivors} {
		for _, p := range list {
			e := entry(runOfPid[p.Pid])
			switch {
			case slices.Contains(rep.Stopped.Terminated, p):
				e.Stopped.Terminated = append(e.Stopped.Terminated, p)
			case slices.Contains(rep.Stopped.Killed, p):
				e.Stopped.Killed = append(e.Stopped.Killed, p)
			default:
				e.Stopped.Survivors = append(e.Stopped.Survivors, p)
			}
		}
	}
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
		_, kept := os.Stat(filepath.Join(d, keepFile))
		if kept == nil && !exists(filepath.Join(d, procsFile)) && !exists(filepath.Join(d, cgroupFile)) {
			continue // kept, and swept before: the user's to remove
		}
		e := entry(id)
		e.Dir = d
		more := stopRunDir(d, id)
		e.Stopped.Terminated = append(e.Stopped.Terminated, more.Terminated...)
		e.Stopped.Killed = append(e.Stopped.Killed, more.Killed...)
		e.Stopped.Survivors = append(e.Stopped.Survivors, more.Survivors...)
		rep.Stopped.Terminated = append(rep.Stopped.Terminated, more.Terminated...)
		rep.Stopped.Killed = append(rep.Stopped.Killed, more.Killed...)
		rep.Stopped.Survivors = append(rep.Stopped.Survivors, more.Survivors...)
		if kept == nil {
			e.Kept = true
			os.Remove(filepath.Join(d, procsFile))
			os.Remove(filepath.Join(d, cgroupFile))
			continue
		}
		if len(more.Survivors) > 0 {
			continue
		}
		if err := os.RemoveAll(d); err == nil || errors.Is(err, os.ErrNotExist) {
			os.Remove(lock)
			e.Removed = true
			rep.Runs = append(rep.Runs, id)
		}
	}
	for _, id := range order {
		rep.Each = append(rep.Each, *byRun[id])
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
		if _, sup := env[SupervisorVar]; sup {
			continue // ends by itself once its tree is stopped
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

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
