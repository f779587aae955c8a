// Package section is reproboard's unit of isolation: one guard script or
// one Go subtest runs in its own directories and environment, under a
// deadline, and every process it starts is stopped by the backstop when it
// ends.
package section

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/reproboard/reproboard/harness/backstop"
)

// BaseEnv overrides the directory under which runs and sections live. The
// default is /tmp: Unix-socket paths inside a section must stay under 104
// bytes, and a test's default TMPDIR is often half of that already.
const BaseEnv = "REPROBOARD_BASE"

// KeepEnv, set to 1, keeps section roots after they end (their path is
// printed) for looking at what a failing section left.
const KeepEnv = "REPROBOARD_KEEP"

// Config describes a section's environment.
type Config struct {
	// Name of the section; ForTest uses the test name.
	Name string
	// CacheVar and RuntimeVar name the target's variables for its state and
	// its rendezvous parent (from the target profile); may be empty.
	CacheVar, RuntimeVar string
	// Env holds extra KEY=VALUE entries for every process of the section.
	Env []string
	// Expand expands $VAR and ${VAR} in Env's values from the section's
	// variables (SECTION, CACHE, RUNTIME, HOME, TMPDIR, the XDG ones, the
	// cache and runtime variables), earlier Env entries and the variables
	// of the outer environment that Pass names. Any other variable is an
	// error: a value that silently lost a part is worse.
	Expand bool
	// Pass names variables of the outer environment Env may expand.
	Pass []string
	// Deadline ends every command of the section; zero means 10 minutes.
	Deadline time.Time
	// Keep keeps the root after the section ends.
	Keep bool
	// Grace is how long SIGTERM gets before SIGKILL at the end.
	Grace time.Duration
}

// Section is one isolated section.
type Section struct {
	Name     string
	Marker   string // value of REPROBOARD_SECTION for this section
	Root     string // mode 0700
	Cache    string
	Runtime  string // exists before the target runs: some targets never create it
	Home     string
	Tmp      string
	Deadline time.Time

	cfg     Config
	env     []string
	runLock string

	run       *backstop.Run
	isolation backstop.Isolation
	cgroup    *backstop.Cgroup // the section's own, under the run's
	cgroupFD  *os.File
	exe       string // this binary, re-executed as a supervisor

	mu          sync.Mutex
	procs       []backstop.Proc
	supervisors []*started
	closed      bool
	end         *End
}

// End says how a section ended.
type End struct {
	Backstop  backstop.Report    // processes still running at the end, and what it took
	Isolation backstop.Isolation // how the section owned its processes
	KeptRoot  string             // set when the root was kept
}

// Clean is true when the section's own steps stopped everything they started.
func (r End) Clean() bool { return r.Backstop.Empty() }

var (
	runOnce sync.Once
	run     *backstop.Run
	runErr  error
	counter struct {
		sync.Mutex
		n int
	}
)

// Base is the directory runs live under.
func Base() string {
	if b := os.Getenv(BaseEnv); b != "" {
		return b
	}
	return "/tmp"
}

// DefaultRun is this process's run: started on first use, after a sweep of
// the residue of dead runs (one line per dead run on stderr), with the
// strongest isolation the machine allows (see Isolation).
func DefaultRun() (*backstop.Run, error) {
	runOnce.Do(func() {
		var sweep backstop.SweepReport
		run, sweep, runErr = backstop.StartRun(Base())
		for _, line := range sweep.Lines() {
			fmt.Fprintf(os.Stderr, "reproboard: %s\n", line)
		}
		if runErr == nil {
			max, _ := backstop.MaxIsolation()
			Supervise(run, max)
		}
	})
	return run, runErr
}

// Supervise settles run's isolation, at most max: its cgroup if a process
// can be started into it, else a supervisor per command if this binary
// can be re-executed as one (it links this package), else the marker.
func Supervise(r *backstop.Run, max backstop.Isolation) {
	exe, err := os.Executable()
	if err != nil {
		r.DropCgroup()
		return
	}
	if r.Cgroup != nil {
		if max.Rank() < backstop.IsolationCgroup.Rank() || probe(exe, r.Cgroup) != nil {
			r.DropCgroup()
		}
	}
	if r.Isolation == backstop.IsolationCgroup || max.Rank() < backstop.IsolationSubreaper.Rank() {
		return
	}
	if probe(exe, nil) == nil {
		r.Isolation = backstop.IsolationSubreaper
	}
}

// probe starts this binary as a supervisor probe: into cg when given.
func probe(exe string, cg *backstop.Cgroup) error {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), superviseEnv+"=probe")
	if cg != nil {
		p, err := cg.Child("probe")
		if err != nil {
			return err
		}
		defer p.Remove()
		f, err := p.Open()
		if err != nil {
			return err
		}
		defer f.Close()
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}
	}
	return cmd.Run()
}

// CloseDefaultRun stops whatever still carries the run's marker and removes
// the run directory; TestMain calls it (through Main) after the tests.
func CloseDefaultRun() backstop.Report {
	if run == nil {
		return backstop.Report{}
	}
	return run.Close(os.Getenv(KeepEnv) == "1")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// shortName keeps a section's directory name short and unique in its run.
func shortName(name string) string {
	counter.Lock()
	counter.n++
	n := counter.n
	counter.Unlock()
	s := unsafeName.ReplaceAllString(name, "-")
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 16 {
		s = s[len(s)-16:]
	}
	return fmt.Sprintf("%d-%s", n, strings.Trim(s, "-."))
}

// New creates a section in run r: its root and directories, and its
// environment.
func New(r *backstop.Run, cfg Config) (*Section, error) {
	if cfg.Name == "" {
		return nil, fmt.Errorf("section needs a name")
	}
	root := filepath.Join(r.Dir, shortName(cfg.Name))
	if err := os.Mkdir(root, 0o700); err != nil {
		return nil, fmt.Errorf("section %s: %w", cfg.Name, err)
	}
	s := &Section{
		Name:      cfg.Name,
		Marker:    r.Marker(cfg.Name),
		Root:      root,
		Cache:     filepath.Join(root, "cache"),
		Runtime:   filepath.Join(root, "runtime"),
		Home:      filepath.Join(root, "home"),
		Tmp:       filepath.Join(root, "tmp"),
		cfg:       cfg,
		runLock:   r.LockPath,
		run:       r,
		isolation: r.Isolation,
	}
	if s.isolation == backstop.IsolationSubreaper {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("section %s: %w", cfg.Name, err)
		}
		s.exe = exe
	}
	s.Deadline = cfg.Deadline
	if s.Deadline.IsZero() {
		s.Deadline = time.Now().Add(10 * time.Minute)
	}
	for _, d := range []string{s.Cache, s.Runtime, s.Home, s.Tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			os.RemoveAll(root)
			return nil, fmt.Errorf("section %s: %w", cfg.Name, err)
		}
	}
	if cfg.Expand {
		env, err := s.expand(cfg.Env)
		if err != nil {
			os.RemoveAll(root)
			return nil, fmt.Errorf("section %s: %w", cfg.Name, err)
		}
		s.cfg.Env = env
	}
	if s.isolation == backstop.IsolationCgroup {
		cg, err := r.Cgroup.Child(filepath.Base(root))
		if err == nil {
			s.cgroupFD, err = cg.Open()
		}
		if err != nil {
			os.RemoveAll(root)
			return nil, fmt.Errorf("section %s: %w", cfg.Name, err)
		}
		s.cgroup = cg
	}
	s.env = s.buildEnv(os.Environ())
	return s, nil
}

// expand expands the variables in env's values; see Config.Expand.
func (s *Section) expand(env []string) ([]string, error) {
	vars := map[string]string{"SECTION": s.Root, "CACHE": s.Cache, "RUNTIME": s.Runtime}
	own := s.cfg.Env
	s.cfg.Env = nil
	for _, kv := range s.buildEnv(nil) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	s.cfg.Env = own
	for _, name := range s.cfg.Pass {
		if v, ok := os.LookupEnv(name); ok {
			vars[name] = v
		}
	}
	var out []string
	var errs []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		v = os.Expand(v, func(name string) string {
			val, ok := vars[name]
			if !ok {
				hint := "pass it with env_pass"
				if slices.Contains(s.cfg.Pass, name) {
					hint = "it is in env_pass but not set in the environment"
				}
				errs = append(errs, fmt.Sprintf("env %s=%s: $%s is not a section variable (%s)", k, strings.SplitN(kv, "=", 2)[1], name, hint))
			}
			return val
		})
		vars[k] = v
		out = append(out, k+"="+v)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

// redirected are replaced in the inherited environment, so that nothing a
// section runs writes into the real user's home.
var redirected = []string{"HOME", "TMPDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", backstop.MarkerVar, backstop.RunLockVar}

func (s *Section) buildEnv(base []string) []string {
	set := map[string]string{
		"HOME":              s.Home,
		"TMPDIR":            s.Tmp,
		"XDG_CACHE_HOME":    filepath.Join(s.Home, ".cache"),
		"XDG_CONFIG_HOME":   filepath.Join(s.Home, ".config"),
		"XDG_DATA_HOME":     filepath.Join(s.Home, ".local", "share"),
		"XDG_STATE_HOME":    filepath.Join(s.Home, ".local", "state"),
		"XDG_RUNTIME_DIR":   s.Runtime,
		backstop.MarkerVar:  s.Marker,
		backstop.RunLockVar: s.runLock,
	}
	if s.cfg.CacheVar != "" {
		set[s.cfg.CacheVar] = s.Cache
	}
	if s.cfg.RuntimeVar != "" {
		set[s.cfg.RuntimeVar] = s.Runtime
	}
	drop := map[string]bool{}
	for _, k := range redirected {
		drop[k] = true
	}
	for k := range set {
		drop[k] = true
	}
	var env []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			env = append(env, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		env = append(env, k+"="+set[k])
	}
	return append(env, s.cfg.Env...)
}

// Env is the environment every process of the section gets.
func (s *Section) Env() []string { return append([]string(nil), s.env...) }

// Vars are the section's own variables (the redirected ones and the
// target's), for script engines that build their own environment.
func (s *Section) Vars() []string {
	own := s.buildEnv(nil)
	return own
}

// Remaining is the time left before the section's deadline.
func (s *Section) Remaining() time.Duration { return time.Until(s.Deadline) }

// Record puts pid under the backstop. Processes started through the
// section are recorded already; a script records pids it learns.
func (s *Section) Record(pid int) error {
	p, err := backstop.Identify(pid)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("section %s has ended", s.Name)
	}
	s.procs = append(s.procs, p)
	return nil
}

// Isolation is how the section owns its processes.
func (s *Section) Isolation() backstop.Isolation { return s.isolation }

// Close runs the backstop: every recorded process, every process of the
// section's cgroup or of its supervisors' trees, and every process that
// carries the section's marker, still running, is stopped (SIGTERM, the
// grace, SIGKILL; then cgroup.kill). Daemons that double-forked, called
// setsid, or cleared or overwrote their environment are found by the
// first two. The root is then removed unless the section is kept. Close
// is idempotent.
func (s *Section) Close() End {
	s.mu.Lock()
	if s.closed {
		r := *s.end
		s.mu.Unlock()
		return r
	}
	s.closed = true
	procs := append([]backstop.Proc(nil), s.procs...)
	sups := append([]*started(nil), s.supervisors...)
	s.mu.Unlock()

	if s.cgroup != nil {
		procs = append(procs, s.cgroup.Procs()...)
	}
	var roots []backstop.Proc
	for _, l := range sups {
		if p, err := backstop.Identify(l.supervisor.Process.Pid); err == nil {
			roots = append(roots, p)
		}
	}
	procs = append(procs, backstop.Descendants(roots)...)
	marked, _ := backstop.WithMarker(s.Marker)
	procs = append(procs, marked...)
	res := End{Backstop: backstop.Stop(procs, s.cfg.Grace), Isolation: s.isolation}
	if s.cgroup != nil {
		res.Backstop.Survivors = append(res.Backstop.Survivors, s.cgroup.Kill(3*time.Second)...)
		s.cgroupFD.Close()
	}
	// A supervisor ends when its tree is empty; it is this section's own
	// child, waited for by its own goroutine.
	for _, l := range sups {
		select {
		case <-l.supDone:
		case <-time.After(3 * time.Second):
			_ = l.supervisor.Process.Kill()
		}
	}
	if s.cfg.Keep || os.Getenv(KeepEnv) == "1" {
		res.KeptRoot = s.Root
	} else {
		os.RemoveAll(s.Root)
	}
	s.mu.Lock()
	s.end = &res
	s.mu.Unlock()
	return res
}
