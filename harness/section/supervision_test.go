package section

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reproboard/reproboard/harness/backstop"
)

// strong are the levels that own processes by the tree: each test of them
// runs once per level, the subreaper one as on a machine without a
// writable cgroup hierarchy.
var strong = []backstop.Isolation{backstop.IsolationCgroup, backstop.IsolationSubreaper}

// runAt starts a run of its own under a fresh base, at exactly level (a
// cgroup level the machine does not have is skipped, saying why).
func runAt(t *testing.T, level backstop.Isolation) (*backstop.Run, string) {
	t.Helper()
	base, err := os.MkdirTemp("/tmp", "rbiso")
	require.NoError(t, err)
	r, _, err := backstop.StartRunWith(base, level)
	require.NoError(t, err)
	Supervise(r, level)
	t.Cleanup(func() {
		r.Close(false)
		os.RemoveAll(base)
	})
	if level == backstop.IsolationCgroup && r.Isolation != level {
		mount, err := backstop.CgroupMount()
		t.Skipf("no writable cgroup v2 hierarchy here (mount %q, %v): run as root or with a delegated cgroup", mount, err)
	}
	require.Equal(t, level, r.Isolation)
	return r, base
}

func environHasMarker(pid int) bool {
	b, _ := os.ReadFile("/proc/" + itoa(pid) + "/environ")
	return strings.Contains(string(b), backstop.MarkerVar)
}

func itoa(n int) string { return strconv.Itoa(n) }

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// A daemon that detaches and clears its environment (setsid -f env -i),
// and one that writes its title over its environment (redis), are stopped
// at the section's end and named in its result.
func TestDaemonWithoutMarkerStoppedAtSectionEnd(t *testing.T) {
	for _, level := range strong {
		for _, mode := range []string{"daemonize-envclear", "daemonize-title"} {
			t.Run(string(level)+"/"+mode, func(t *testing.T) {
				r, _ := runAt(t, level)
				s, err := New(r, Config{Name: t.Name()})
				require.NoError(t, err)
				res := s.Run(helperSpec(mode))
				require.Equal(t, 0, res.RC, res.Output)
				daemon, err := backstop.Identify(pidIn(t, res.Output))
				require.NoError(t, err)
				require.True(t, daemon.Alive())
				assert.False(t, environHasMarker(daemon.Pid), "the daemon still shows the marker: the test proves nothing")
				end := s.Close()
				assert.Equal(t, level, end.Isolation)
				assert.False(t, daemon.Alive(), "the %s daemon survived its section under %s isolation", mode, level)
				assert.Contains(t, pidsOf(end.Backstop.Stopped()), daemon.Pid, "not named in the result: %s", end.Backstop)
			})
		}
	}
}

// What the marker-only level does not give: a daemon that cleared its
// environment escapes the section (the test stops it itself).
func TestMarkerLevelLosesEnvClearedDaemon(t *testing.T) {
	r, _ := runAt(t, backstop.IsolationMarker)
	s, err := New(r, Config{Name: t.Name()})
	require.NoError(t, err)
	res := s.Run(helperSpec("daemonize-envclear"))
	require.Equal(t, 0, res.RC, res.Output)
	daemon, err := backstop.Identify(pidIn(t, res.Output))
	require.NoError(t, err)
	defer backstop.Stop([]backstop.Proc{daemon}, time.Second)
	end := s.Close()
	assert.Equal(t, backstop.IsolationMarker, end.Isolation)
	assert.True(t, daemon.Alive(), "marker isolation found an env-cleared daemon: the README's table is wrong")
}

// After a harness is killed by SIGKILL, the next run's sweep stops its
// env-cleared and title-rewriting daemons, found by what the run directory
// recorded (the cgroup, the supervisors), and says so in one line.
func TestSweepAfterKilledHarnessFindsDaemonsWithoutMarker(t *testing.T) {
	for _, level := range strong {
		t.Run(string(level), func(t *testing.T) {
			if level == backstop.IsolationCgroup {
				runAt(t, level) // skips where there is no cgroup
			}
			base, err := os.MkdirTemp("/tmp", "rbkill")
			require.NoError(t, err)
			defer os.RemoveAll(base)
			s := newSection(t, Config{})
			child, err := s.Start("harness", Spec{
				Args: []string{os.Args[0]},
				Env: []string{helperEnv + "=harness-child", BaseEnv + "=" + base, backstop.IsolationEnv + "=" + string(level),
					"HARNESS_DAEMONS=daemonize-envclear daemonize-title"},
			})
			require.NoError(t, err)
			_, err = child.WaitLine("stdout", regexp.MustCompile(`^run \S+ root \S+`), 20*time.Second)
			require.NoError(t, err, child.Output())
			var daemons []backstop.Proc
			for _, m := range pidRE.FindAllStringSubmatch(child.Output(), -1) {
				p, err := backstop.Identify(atoi(m[1]))
				require.NoError(t, err)
				daemons = append(daemons, p)
			}
			require.Len(t, daemons, 2, child.Output())
			require.NoError(t, child.Signal(syscall.SIGKILL))
			_, err = child.Wait(5 * time.Second)
			require.NoError(t, err)
			for _, d := range daemons {
				require.True(t, d.Alive(), "%s outlives its killed harness", d)
				require.False(t, environHasMarker(d.Pid))
			}
			r, sweep, err := backstop.StartRun(base)
			require.NoError(t, err)
			defer r.Close(false)
			for _, d := range daemons {
				assert.False(t, d.Alive(), "the sweep did not stop %s", d)
				assert.Contains(t, pidsOf(sweep.Stopped.Stopped()), d.Pid)
			}
			require.Len(t, sweep.Lines(), 1, "%q", sweep.Lines())
			assert.Regexp(t, `^swept dead run [0-9a-f]{8}: stopped pid \d+ .*; removed `+regexp.QuoteMeta(base), sweep.Lines()[0])
		})
	}
}

// Sections in parallel, each with short-lived commands that leave short
// orphans: every command's exit status reaches its own section. (A harness
// that reaped any zombie child took other sections' statuses.)
func TestParallelSectionsKeepTheirExitStatus(t *testing.T) {
	for _, level := range append(strong, backstop.IsolationMarker) {
		t.Run(string(level), func(t *testing.T) {
			r, _ := runAt(t, level)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var failures []string
			for i := range 12 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s, err := New(r, Config{Name: "par" + itoa(i)})
					if err != nil {
						t.Error(err)
						return
					}
					defer s.Close()
					var cw sync.WaitGroup
					for range 10 {
						cw.Add(1)
						go func() {
							defer cw.Done()
							res := s.Run(Spec{Args: []string{"sh", "-c", "(sleep 0.1 &); echo ok"}, Timeout: 30 * time.Second})
							if res.RC != 0 || res.Stdout != "ok\n" {
								mu.Lock()
								failures = append(failures, fmt.Sprintf("rc=%d total=%d after %s err=%v output=%q", res.RC, res.Total, res.Duration, res.Err, res.Output))
								mu.Unlock()
							}
						}()
					}
					cw.Wait()
				}()
			}
			wg.Wait()
			assert.Empty(t, failures)
		})
	}
}
