package section

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reproboard/reproboard/harness/backstop"
)

var pidRE = regexp.MustCompile(`pid[: ]+(\d+)`)

func pidIn(t *testing.T, out string) int {
	t.Helper()
	m := pidRE.FindStringSubmatch(out)
	require.NotNil(t, m, "no pid in output:\n%s", out)
	pid, _ := strconv.Atoi(m[1])
	return pid
}

func newSection(t *testing.T, cfg Config) *Section {
	t.Helper()
	r, err := DefaultRun()
	require.NoError(t, err)
	if cfg.Name == "" {
		cfg.Name = t.Name()
	}
	s, err := New(r, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSectionDirectoriesAndEnvironment(t *testing.T) {
	s := newSection(t, Config{CacheVar: "DEMO_CACHE", RuntimeVar: "DEMO_RUNTIME", Env: []string{"EXTRA=1"}})
	fi, err := os.Stat(s.Root)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	for _, d := range []string{s.Cache, s.Runtime, s.Home, s.Tmp} {
		fi, err := os.Stat(d)
		require.NoError(t, err, d)
		assert.True(t, fi.IsDir())
	}
	// A socket path in the runtime dir stays far below the 104-byte limit.
	assert.Less(t, len(filepath.Join(s.Runtime, "daemon-rendezvous.sock")), 80, s.Runtime)

	env := map[string]string{}
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	assert.Equal(t, s.Cache, env["DEMO_CACHE"])
	assert.Equal(t, s.Runtime, env["DEMO_RUNTIME"])
	assert.Equal(t, s.Home, env["HOME"])
	assert.Equal(t, s.Tmp, env["TMPDIR"])
	assert.Equal(t, s.Runtime, env["XDG_RUNTIME_DIR"])
	for _, k := range []string{"XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"} {
		assert.True(t, strings.HasPrefix(env[k], s.Root+"/"), "%s=%s", k, env[k])
	}
	assert.Equal(t, s.Marker, env[backstop.MarkerVar])
	assert.Equal(t, "1", env["EXTRA"])

	s.Close()
	_, err = os.Stat(s.Root)
	assert.True(t, os.IsNotExist(err), "root removed at the end")
}

func TestHomeIsRedirected(t *testing.T) {
	realHome, _ := os.UserHomeDir()
	before, beforeErr := os.Stat(filepath.Join(realHome, ".cache", "x"))
	s := newSection(t, Config{})
	res := s.Run(helperSpec("write-home"))
	require.Equal(t, 0, res.RC, res.Output)
	data, err := os.ReadFile(filepath.Join(s.Home, ".cache", "x"))
	require.NoError(t, err, "the target's $HOME/.cache/x lands inside the section")
	assert.Equal(t, "x", string(data))
	after, afterErr := os.Stat(filepath.Join(realHome, ".cache", "x"))
	assert.Equal(t, beforeErr == nil, afterErr == nil, "real home untouched")
	if beforeErr == nil {
		assert.Equal(t, before.ModTime(), after.ModTime())
	}
}

func TestRunReportsExitCodeAndOutput(t *testing.T) {
	s := newSection(t, Config{})
	res := s.Run(Spec{Args: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}})
	assert.Equal(t, 3, res.RC)
	assert.Contains(t, res.Output, "out\n")
	assert.Contains(t, res.Output, "err\n")
	assert.False(t, res.TimedOut)

	missing := s.Run(Spec{Args: []string{"/nonexistent/binary"}})
	assert.Equal(t, -1, missing.RC)
	assert.Error(t, missing.Err)
}

func TestRunTimeoutKeepsPartialOutput(t *testing.T) {
	s := newSection(t, Config{})
	start := time.Now()
	res := s.Run(Spec{Args: helperSpec("hang").Args, Env: helperSpec("hang").Env, Timeout: 500 * time.Millisecond})
	took := time.Since(start)
	assert.Equal(t, TimeoutRC, res.RC)
	assert.True(t, res.TimedOut)
	assert.Contains(t, res.Output, "partial output before the hang")
	assert.True(t, strings.HasSuffix(res.Output, "[timed out after 0.5s]"), res.Output)
	assert.Less(t, took, 500*time.Millisecond+2*time.Second)
}

func TestGrandchildHoldingStdoutDoesNotHangTheWait(t *testing.T) {
	s := newSection(t, Config{})
	start := time.Now()
	res := s.Run(helperSpec("grandchild-holds-stdout"))
	assert.Less(t, time.Since(start), 5*time.Second, "wait hung on the grandchild's pipe")
	assert.Equal(t, 0, res.RC, res.Output)
	gc := pidIn(t, res.Output)
	end := s.Close()
	assert.Contains(t, pidsOf(end.Backstop.Stopped()), gc, "the grandchild is the backstop's")
}

func pidsOf(ps []backstop.Proc) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.Pid)
	}
	return out
}

func TestBackstopStopsDoubleForkedSetsidDaemon(t *testing.T) {
	s := newSection(t, Config{})
	res := s.Run(helperSpec("daemonize"))
	require.Equal(t, 0, res.RC, res.Output)
	pid := pidIn(t, res.Output)
	daemon, err := backstop.Identify(pid)
	require.NoError(t, err)
	require.True(t, daemon.Alive(), "daemon runs after its parent exited")

	end := s.Close()
	assert.False(t, daemon.Alive(), "daemon still runs after the section ended")
	assert.Contains(t, pidsOf(end.Backstop.Stopped()), pid, "the result names the daemon: %s", end.Backstop)
	assert.Empty(t, end.Backstop.Survivors)
	assert.Contains(t, end.Backstop.String(), "pid "+strconv.Itoa(pid))
}

func TestBackstopKillsWhatIgnoresSIGTERM(t *testing.T) {
	s := newSection(t, Config{Grace: 300 * time.Millisecond})
	res := s.Run(helperSpec("daemonize", "stubborn"))
	require.Equal(t, 0, res.RC, res.Output)
	pid := pidIn(t, res.Output)
	end := s.Close()
	assert.Equal(t, []int{pid}, pidsOf(end.Backstop.Killed), "needed SIGKILL: %s", end.Backstop)
}

func TestBackstopNeverSignalsAReusedPid(t *testing.T) {
	s := newSection(t, Config{})
	bystander, err := s.Start("bystander", Spec{Args: []string{"sleep", "30"}})
	require.NoError(t, err)
	defer bystander.Signal(syscall.SIGKILL)
	// A record of the same pid with another start time is another process,
	// as after pid reuse: it must not be signalled.
	stale := backstop.Proc{Pid: bystander.Pid(), Start: bystander.ID.Start - 1}
	rep := backstop.Stop([]backstop.Proc{stale}, 100*time.Millisecond)
	assert.True(t, rep.Empty(), "%s", rep)
	assert.True(t, bystander.ID.Alive(), "the bystander was signalled")
	assert.Error(t, backstop.Signal(stale, syscall.SIGTERM))
}

func TestZombieCountsAsDead(t *testing.T) {
	s := newSection(t, Config{})
	p, err := s.Start("short", Spec{Args: []string{"true"}})
	require.NoError(t, err)
	_, err = p.Wait(5 * time.Second)
	require.NoError(t, err)
	assert.False(t, p.ID.Alive())
	assert.True(t, s.Close().Backstop.Empty())
}

// A target printing 200 MB must not grow the harness's heap past a few MiB.
func TestFloodDoesNotGrowTheHarness(t *testing.T) {
	s := newSection(t, Config{})
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
		}
	}()
	res := s.Run(helperSpec("flood", strconv.Itoa(200<<20)))
	close(stop)
	<-done
	require.Equal(t, 0, res.RC)
	assert.GreaterOrEqual(t, res.Total, int64(200<<20))
	assert.True(t, strings.HasSuffix(res.Output, "flood done\n"))
	assert.LessOrEqual(t, len(res.Output), 70<<10)
	growth := int64(peak.Load()) - int64(base)
	t.Logf("heap objects peak growth while 200 MB were printed: %d KiB", growth>>10)
	// Live heap objects, which GC churn can inflate by a few buffers.
	assert.Less(t, growth, int64(8<<20))
}

func TestBackgroundProcess(t *testing.T) {
	s := newSection(t, Config{})
	p, err := s.Start("echo", helperSpec("echo-stdin"))
	require.NoError(t, err)
	require.NoError(t, p.Send("hello\n"))
	line, err := p.WaitLine("stdout", regexp.MustCompile(`^got: hello`), 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "got: hello", line.Text)

	_, err = p.WaitLine("", regexp.MustCompile(`never printed`), 200*time.Millisecond)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `waiting for echo to print a line matching "never printed"`)
	assert.Contains(t, err.Error(), `last line "got: hello"`)

	require.NoError(t, p.CloseStdin())
	res, err := p.Wait(5 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, 3, res.RC)
	assert.Contains(t, res.Output, "stdin closed")

	_, err = p.WaitLine("", regexp.MustCompile(`more`), 5*time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited (rc 3)")
}

func TestBackgroundSignal(t *testing.T) {
	s := newSection(t, Config{})
	p, err := s.Start("sleeper", Spec{Args: []string{"sleep", "30"}})
	require.NoError(t, err)
	require.NoError(t, p.Signal(syscall.SIGTERM))
	res, err := p.Wait(5 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, 128+int(syscall.SIGTERM), res.RC)
}

// The residue sweep: a harness killed by SIGKILL leaves a setsid daemon;
// the next run kills it and removes the section roots.
func TestResidueSweepAfterHarnessKilled(t *testing.T) {
	base, err := os.MkdirTemp("/tmp", "rbsweep")
	require.NoError(t, err)
	defer os.RemoveAll(base)

	s := newSection(t, Config{})
	child, err := s.Start("harness", Spec{
		Args: []string{os.Args[0]},
		Env:  []string{helperEnv + "=harness-child", BaseEnv + "=" + base, "HARNESS_DAEMONS=daemonize"},
	})
	require.NoError(t, err)
	line, err := child.WaitLine("stdout", regexp.MustCompile(`^run \S+ root \S+`), 20*time.Second)
	require.NoError(t, err, child.Output())
	daemonPid := pidIn(t, child.Output())
	daemon, err := backstop.Identify(daemonPid)
	require.NoError(t, err)
	fields := strings.Fields(line.Text)
	runDir := filepath.Join(base, "rb-"+fields[1])
	root := fields[3]
	require.DirExists(t, root)

	require.NoError(t, child.Signal(syscall.SIGKILL))
	_, err = child.Wait(5 * time.Second)
	require.NoError(t, err)
	require.True(t, daemon.Alive(), "the daemon outlives its killed harness")

	r, sweep, err := backstop.StartRun(base)
	require.NoError(t, err)
	defer r.Close(false)
	assert.False(t, daemon.Alive(), "the sweep did not kill the residue daemon")
	// The daemon carries the marker and the dead run's lock, so any run's
	// sweep on the machine may stop it first (that is the sweep's job).
	if !slices.Contains(pidsOf(sweep.Stopped.Stopped()), daemonPid) {
		t.Logf("pid %d was stopped by a concurrent run's sweep before this one", daemonPid)
	}
	assert.Contains(t, sweep.Runs, fields[1])
	assert.NoDirExists(t, runDir, "the dead run's section roots are removed")
	assert.NoFileExists(t, runDir+".lock", "and its lock file")
}

// A live run's processes and directories are left alone by another sweep.
func TestSweepSparesLiveRuns(t *testing.T) {
	s := newSection(t, Config{})
	res := s.Run(helperSpec("daemonize"))
	require.Equal(t, 0, res.RC)
	daemon, err := backstop.Identify(pidIn(t, res.Output))
	require.NoError(t, err)
	rep, err := backstop.Sweep(Base())
	require.NoError(t, err)
	assert.True(t, daemon.Alive(), "a live run's daemon was swept: %+v", rep)
	assert.DirExists(t, s.Root)
}

// A run under another base (another test binary, another user setting
// REPROBOARD_BASE) sweeps residue, never the processes of a live run.
func TestSweepFromAnotherBaseSparesLiveRuns(t *testing.T) {
	s := newSection(t, Config{})
	res := s.Run(helperSpec("daemonize"))
	require.Equal(t, 0, res.RC)
	daemon, err := backstop.Identify(pidIn(t, res.Output))
	require.NoError(t, err)

	other, err := os.MkdirTemp("/tmp", "rbother")
	require.NoError(t, err)
	defer os.RemoveAll(other)
	r, sweep, err := backstop.StartRun(other)
	require.NoError(t, err)
	defer r.Close(false)
	assert.True(t, daemon.Alive(), "a sweep under %s killed a live run's daemon: %s", other, sweep.Stopped)
	assert.NotContains(t, pidsOf(sweep.Stopped.Stopped()), daemon.Pid)
}

// Env values expand from the section's variables, earlier entries and the
// outer variables Pass names; any other variable is an error that says so.
func TestEnvExpansion(t *testing.T) {
	t.Setenv("SECTION_TEST_OUTER", "outer")
	t.Setenv("SECTION_TEST_HIDDEN", "hidden")
	s := newSection(t, Config{CacheVar: "DEMO_CACHE", Expand: true, Pass: []string{"SECTION_TEST_OUTER"},
		Env: []string{"DATA=$CACHE/data", "RUN=${RUNTIME}/r", "BOTH=$SECTION_TEST_OUTER:$DATA", "H=$HOME", "C=$DEMO_CACHE"}})
	env := map[string]string{}
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	assert.Equal(t, s.Cache+"/data", env["DATA"])
	assert.Equal(t, s.Runtime+"/r", env["RUN"])
	assert.Equal(t, "outer:"+s.Cache+"/data", env["BOTH"])
	assert.Equal(t, s.Home, env["H"])
	assert.Equal(t, s.Cache, env["C"])

	r, err := DefaultRun()
	require.NoError(t, err)
	_, err = New(r, Config{Name: t.Name() + "-bad", Expand: true, Env: []string{"X=$SECTION_TEST_HIDDEN/x"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "env X=$SECTION_TEST_HIDDEN/x: $SECTION_TEST_HIDDEN is not a section variable (pass it with env_pass)")
}
