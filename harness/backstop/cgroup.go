package backstop

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Isolation names how a section owns its processes, strongest first.
type Isolation string

const (
	// IsolationCgroup: each section's processes live in their own cgroup
	// v2; membership cannot be left without privileges.
	IsolationCgroup Isolation = "cgroup"
	// IsolationSubreaper: a supervisor process per started command is
	// child subreaper for what it runs, so every orphan stays its
	// descendant.
	IsolationSubreaper Isolation = "subreaper"
	// IsolationMarker: only the recorded pids and the marker variable.
	IsolationMarker Isolation = "marker"
)

// IsolationEnv caps the isolation a run uses: "subreaper" disables cgroup,
// "marker" disables both (tests of the weaker levels set it).
const IsolationEnv = "REPROBOARD_ISOLATION"

// MaxIsolation is the strongest level IsolationEnv allows.
func MaxIsolation() (Isolation, error) {
	switch v := Isolation(os.Getenv(IsolationEnv)); v {
	case "", IsolationCgroup:
		return IsolationCgroup, nil
	case IsolationSubreaper, IsolationMarker:
		return v, nil
	default:
		return "", fmt.Errorf("%s=%q: want cgroup, subreaper or marker", IsolationEnv, v)
	}
}

// Rank orders the levels: cgroup 2, subreaper 1, marker 0.
func (i Isolation) Rank() int {
	switch i {
	case IsolationCgroup:
		return 2
	case IsolationSubreaper:
		return 1
	}
	return 0
}

// CgroupMount is where the cgroup v2 hierarchy is mounted, read from
// /proc/self/mountinfo (/sys/fs/cgroup on unified hosts,
// /sys/fs/cgroup/unified on hybrid ones).
func CgroupMount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, types := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(types) < 1 || types[0] != "cgroup2" {
			continue
		}
		if fields[3] != "/" {
			continue // a bind mount of a sub-tree: our own path is not under it
		}
		return unescapeMount(fields[4]), nil
	}
	return "", errors.New("no cgroup2 file system in /proc/self/mountinfo")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroup is this process's cgroup v2 path ("0::/path" in /proc/self/cgroup).
func ownCgroup() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	return ""
}

// cgroupParents are the directories a run's cgroup may be made in, in
// order: a shared reproboard/ at the root of the hierarchy (root, or a
// delegated root), then this process's own cgroup (a delegated scope, e.g.
// systemd-run --user --scope -p Delegate=yes).
func cgroupParents() ([]string, error) {
	mount, err := CgroupMount()
	if err != nil {
		return nil, err
	}
	out := []string{filepath.Join(mount, "reproboard")}
	if own := ownCgroup(); own != "" && own != "/" {
		out = append(out, filepath.Join(mount, own))
	}
	return out, nil
}

// Cgroup is one cgroup v2 directory.
type Cgroup struct{ Path string }

// newRunCgroup makes the run's cgroup, named by the run id, under the
// first writable parent.
func newRunCgroup(id string) (*Cgroup, error) {
	parents, err := cgroupParents()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, parent := range parents {
		if filepath.Base(parent) == "reproboard" {
			if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				errs = append(errs, err)
				continue
			}
		}
		dir := filepath.Join(parent, runPrefix+id)
		if err := os.Mkdir(dir, 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
			os.Remove(dir)
			errs = append(errs, err)
			continue
		}
		return &Cgroup{Path: dir}, nil
	}
	return nil, errors.Join(errs...)
}

// Child makes (or finds) the sub-cgroup name.
func (c *Cgroup) Child(name string) (*Cgroup, error) {
	dir := filepath.Join(c.Path, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	return &Cgroup{Path: dir}, nil
}

// Open opens the cgroup directory, for starting a process straight into
// it (SysProcAttr.UseCgroupFD: clone3 with CLONE_INTO_CGROUP, so it is a
// member before it runs its first instruction).
func (c *Cgroup) Open() (*os.File, error) { return os.Open(c.Path) }

// Pids lists the processes of the cgroup and of its sub-cgroups.
func (c *Cgroup) Pids() []int {
	var out []int
	_ = filepath.WalkDir(c.Path, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
		return nil
	})
	return out
}

// Procs identifies the live processes of the cgroup tree.
func (c *Cgroup) Procs() []Proc {
	var out []Proc
	for _, pid := range c.Pids() {
		if p, err := Identify(pid); err == nil && p.Alive() {
			out = append(out, p)
		}
	}
	return out
}

// Populated reads cgroup.events: whether a live process is left in the
// cgroup or below it.
func (c *Cgroup) Populated() bool {
	b, err := os.ReadFile(filepath.Join(c.Path, "cgroup.events"))
	if err != nil {
		return len(c.Pids()) > 0
	}
	return bytes.Contains(b, []byte("populated 1"))
}

// Kill kills every process of the cgroup tree at once (cgroup.kill, kernel
// 5.14 and later; SIGKILL per pid before that), waits up to d for the tree
// to be empty, and removes it. The processes left, if any, are returned.
func (c *Cgroup) Kill(d time.Duration) []Proc {
	deadline := time.Now().Add(d)
	for {
		if !c.Populated() {
			break
		}
		if err := os.WriteFile(filepath.Join(c.Path, "cgroup.kill"), []byte("1"), 0); err != nil {
			for _, p := range c.Procs() {
				signal(p, 9)
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	left := c.Procs()
	c.Remove()
	return left
}

// Remove removes the cgroup tree's empty directories, deepest first.
func (c *Cgroup) Remove() error {
	var dirs []string
	_ = filepath.WalkDir(c.Path, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var last error
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			last = err
		}
	}
	return last
}
