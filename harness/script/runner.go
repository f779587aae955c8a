// Package script runs guard scripts: txtar files driven by testscript, each
// one an isolated section, with commands for daemons, client storms, MCP
// sessions, locks, ports and resource meters.
package script

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/reproboard/reproboard/harness/config"
	"github.com/reproboard/reproboard/harness/excerpt"
	"github.com/reproboard/reproboard/harness/meter"
	"github.com/reproboard/reproboard/harness/outcome"
	"github.com/reproboard/reproboard/harness/section"
	"github.com/reproboard/reproboard/harness/target"
)

// Params configures Run.
type Params struct {
	// Dir holds the scripts (*.txtar). Each subdirectory becomes a subtest
	// of its own, so testdata/guards/daemon/lifecycle.txtar runs as
	// TestX/daemon/lifecycle.
	Dir string
	// Target overrides the profile from boards.yaml (tests of the engine).
	Target *target.Target
	// NoTarget runs scripts without a target: no `target` command.
	NoTarget bool
	// Cmds adds commands; they may not replace reproboard's own.
	Cmds map[string]func(ts *testscript.TestScript, neg bool, args []string)
	// Setup runs after reproboard's own setup.
	Setup func(env *testscript.Env) error
}

// deadlineMargin leaves the backstop time before `go test -timeout` panics.
const deadlineMargin = 15 * time.Second

// Run runs every script under p.Dir, in parallel, each in its own section.
// A failing script never affects another.
func Run(t *testing.T, p Params) {
	t.Helper()
	entries, err := os.ReadDir(p.Dir)
	if err != nil {
		t.Fatalf("guard scripts: %v", err)
	}
	hasScripts := false
	for _, e := range entries {
		switch {
		case e.IsDir():
			sub := p
			sub.Dir = filepath.Join(p.Dir, e.Name())
			t.Run(e.Name(), func(t *testing.T) {
				t.Parallel()
				Run(t, sub)
			})
		case strings.HasSuffix(e.Name(), ".txtar"):
			hasScripts = true
		}
	}
	if !hasScripts {
		return
	}
	cmds := Commands()
	for name, c := range p.Cmds {
		if _, ok := cmds[name]; ok {
			t.Fatalf("script.Params.Cmds: %q is a reproboard command", name)
		}
		cmds[name] = c
	}
	refused, err := refusals(p.Dir)
	if err != nil {
		t.Fatalf("guard scripts: %v", err)
	}
	var deadline time.Time
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-deadlineMargin)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 p.Dir,
		Cmds:                cmds,
		Condition:           condition(p),
		Deadline:            deadline,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			if tb, ok := env.T().(TB); ok && refused[path.Base(tb.Name())] != "" {
				outcome.Mark(tb, outcome.Red, "script refused: it uses testscript's exec")
				return fmt.Errorf("%s", refused[path.Base(tb.Name())])
			}
			if err := setup(env, p, deadline); err != nil {
				return err
			}
			if p.Setup != nil {
				return p.Setup(env)
			}
			return nil
		},
	})
}

// TB is what the runner needs of the test a script runs in; testscript's T
// wraps *testing.T, whose methods it promotes.
type TB interface {
	testing.TB
	Deadline() (time.Time, bool)
}

const stateKey = "reproboard.script"

// state is one script's section and everything its commands hold.
type state struct {
	t       TB
	sec     *section.Section
	target  *target.Target
	started time.Time

	mu          sync.Mutex
	procs       map[string]*procHandle
	pids        map[string]pidHandle
	holds       map[string]func() error // ports and locks, by name
	mcps        map[string]*mcpSession
	marked      outcome.Outcome // SETUP-FAIL or INCONCLUSIVE, set where it happened
	lastFailure string
	leaks       int     // leak commands run so far: the default -name is leak<N>
	artifacts   *string // the section's artefact directory, once chosen

	lastName string        // the command that ran last, and how long
	lastTook time.Duration // (the failed one, when the script fails)
	attrDone bool
}

func stateOf(ts *testscript.TestScript) *state {
	st, _ := ts.Value(stateKey).(*state)
	if st == nil {
		ts.Fatalf("reproboard commands need script.Run (no section for this script)")
	}
	return st
}

var binDir = sync.OnceValues(func() (string, error) {
	r, err := section.DefaultRun()
	if err != nil {
		return "", err
	}
	return filepath.Join(r.Dir, "bin"), nil
})

// Target resolves the target the scripts of this test binary run against
// (built once, into the run's directory, when its profile names a package).
func Target() (*target.Target, error) {
	dir, err := binDir()
	if err != nil {
		return nil, err
	}
	return target.Resolve(dir)
}

func setup(env *testscript.Env, p Params, deadline time.Time) error {
	t, ok := env.T().(TB)
	if !ok {
		return fmt.Errorf("script.Run needs testscript.Run's *testing.T")
	}
	outcome.Select(t)
	st := &state{t: t, started: time.Now(), procs: map[string]*procHandle{}, pids: map[string]pidHandle{},
		holds: map[string]func() error{}, mcps: map[string]*mcpSession{}}
	cfg := section.Config{Name: t.Name(), Deadline: deadline}
	switch {
	case p.Target != nil:
		st.target = p.Target
	case !p.NoTarget:
		var err error
		if st.target, err = Target(); err != nil {
			outcome.Mark(t, outcome.SetupFail, err.Error())
			return fmt.Errorf("SETUP-FAIL: %v", err)
		}
	}
	if st.target != nil {
		cfg.CacheVar, cfg.RuntimeVar = st.target.CacheVar, st.target.RuntimeVar
		for _, k := range slices.Sorted(mapsKeys(st.target.Env)) {
			cfg.Env = append(cfg.Env, k+"="+st.target.Env[k])
		}
		cfg.Expand, cfg.Pass = true, st.target.EnvPass
		sayTarget(t, st.target)
	}
	r, err := section.DefaultRun()
	if err != nil {
		outcome.Mark(t, outcome.SetupFail, err.Error())
		return err
	}
	st.sec, err = section.New(r, cfg)
	if err != nil {
		if st.target != nil && len(st.target.Env) > 0 {
			err = fmt.Errorf("%w (target %s's env:, %s)", err, st.target.Name, st.target.Pos)
		}
		outcome.Mark(t, outcome.SetupFail, err.Error())
		return fmt.Errorf("SETUP-FAIL: %v", err)
	}
	env.Vars = append(env.Vars, st.sec.Vars()...)
	env.Vars = append(env.Vars,
		"SECTION="+st.sec.Root, "CACHE="+st.sec.Cache, "RUNTIME="+st.sec.Runtime)
	if st.target != nil {
		for _, name := range st.target.EnvPass {
			if v, ok := os.LookupEnv(name); ok {
				env.Vars = append(env.Vars, name+"="+v)
			}
		}
	}
	if st.target != nil {
		env.Vars = append(env.Vars, "TARGET="+st.target.Path, "TARGET_NAME="+st.target.Name,
			"TARGET_LOG="+st.target.LogPath(st.sec.Cache))
	}
	// $NODE_V8HEAP: NODE_OPTIONS that preload the V8 heap probe, for leak's
	// v8heap metric.
	nodeOpts, heapEnv, err := meter.V8HeapSetup(filepath.Join(st.sec.Root, "v8heap"))
	if err != nil {
		outcome.Mark(t, outcome.SetupFail, err.Error())
		return err
	}
	env.Vars = append(env.Vars, "NODE_V8HEAP="+nodeOpts)
	env.Vars = append(env.Vars, heapEnv...)
	env.Values[stateKey] = st
	env.Defer(st.finish)
	return nil
}

// saidTarget keeps the targets this test binary has named already.
var saidTarget sync.Map

// sayTarget says once per test binary which target and binary the scripts
// run against, and why (shown with -v, and again in every failing section);
// every section carries it as an attribute for the board.
func sayTarget(t TB, tg *target.Target) {
	t.Attr(AttrTarget, tg.Name+" "+tg.Path+" "+tg.Hash)
	if _, said := saidTarget.LoadOrStore(tg.Name, true); !said {
		t.Logf("reproboard: %s", tg.Describe())
	}
}

// AttrTarget is the test attribute naming the target a section ran:
// "NAME PATH sha256:HASH".
const AttrTarget = "reproboard.target"

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// finish ends the section: sessions and holds are released, the backstop
// stops what is left, and the outcome is recorded for the board.
func (st *state) finish() {
	t := st.t
	st.mu.Lock()
	for _, m := range st.mcps {
		m.abort()
	}
	for name, release := range st.holds {
		if err := release(); err != nil {
			t.Logf("release %s: %v", name, err)
		}
	}
	st.mu.Unlock()
	failed := t.Failed()
	if failed {
		st.failedCheck()
		st.logTail()
		if st.target != nil {
			t.Logf("reproboard: %s", st.target.Describe())
		}
	}
	section.Report(t, st.sec.Close())
	switch {
	case st.marked != "":
		// marked where it happened
	case t.Failed():
		outcome.Mark(t, outcome.Red, st.lastFailure)
	default:
		outcome.Mark(t, outcome.Green, "")
	}
}

// logTail shows the end of the target's log file: the daemon's side of a
// failure is often only there.
func (st *state) logTail() {
	if tail, err := st.targetLog(excerpt.DefaultLimit); err == nil {
		st.t.Logf("tail of the target log %s:\n%s", st.target.Log, tail)
	}
}

// targetLog is the tail of the target's log file in this section.
func (st *state) targetLog(limit int) (string, error) {
	if st.target == nil || st.target.Log == "" {
		return "", fmt.Errorf("the target profile names no log file")
	}
	data, err := os.ReadFile(st.target.LogPath(st.sec.Cache))
	if err != nil {
		return "", err
	}
	return excerpt.Excerpt(string(data), limit), nil
}

func condition(p Params) func(string) (bool, error) {
	current := sync.OnceValues(func() (*config.Target, error) {
		if p.Target != nil {
			return p.Target.Target, nil
		}
		if p.NoTarget {
			return &config.Target{}, nil
		}
		path, err := target.FindConfig()
		if err != nil {
			return nil, err
		}
		cfg, err := config.Load(path)
		if err != nil {
			return nil, err
		}
		name := target.Name(cfg)
		for _, t := range cfg.Targets {
			if t.Name == name {
				return t, nil
			}
		}
		return &config.Target{Name: name}, nil
	})
	return func(cond string) (bool, error) {
		switch {
		case strings.HasPrefix(cond, "target:"):
			t, err := current()
			return err == nil && t.Name == strings.TrimPrefix(cond, "target:"), err
		case strings.HasPrefix(cond, "feature:"):
			t, err := current()
			return err == nil && hasFeature(t, strings.TrimPrefix(cond, "feature:")), err
		case cond == "root":
			return os.Geteuid() == 0, nil
		}
		return false, fmt.Errorf("unknown condition %q (reproboard adds target:NAME, feature:NAME and root to testscript's own, such as linux)", cond)
	}
}
