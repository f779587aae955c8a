package backstop

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A command name may hold spaces and parentheses: fields are counted after
// the last ')'.
func TestParseStatOddCommand(t *testing.T) {
	const line = "4242 (my (odd) daemon) S 1 4242 4242 0 -1 4194560 1200 0 0 0 15 7 0 0 20 0 9 0 123456 734003200 5120 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	st, err := parseStat([]byte(line))
	require.NoError(t, err)
	assert.Equal(t, stat{state: 'S', ppid: 1, start: 123456}, st)
	for _, bad := range []string{"", "12 no parens S 1", "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18"} {
		_, err := parseStat([]byte(bad))
		assert.Error(t, err, "parseStat(%q)", bad)
	}
}

// A process in do_exit (PF_EXITING in the flags) still reads R or D, but
// its memory and files are going: it counts as finished.
func TestParseStatExiting(t *testing.T) {
	const line = "77 (d) R 1 77 77 0 -1 4194564 0 0 0 0 0 0 0 0 20 0 1 0 999 0 0 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	st, err := parseStat([]byte(line))
	require.NoError(t, err)
	assert.Equal(t, byte('X'), st.state)
	assert.True(t, Finished(st.state))
}

func TestStateZombieAndGone(t *testing.T) {
	start, state, err := State(os.Getpid())
	require.NoError(t, err)
	assert.False(t, Finished(state), "state %c", state)
	self, err := Identify(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, self.Start, start)

	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep binary: %v", err)
	}
	pid := cmd.Process.Pid
	require.NoError(t, cmd.Process.Kill())
	// Killed but not reaped: a zombie until Wait.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, state, err = State(pid)
		require.NoError(t, err)
		if Finished(state) || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	assert.True(t, Finished(state), "killed, unreaped child is in state %c", state)
	cmd.Wait()
	_, _, err = State(pid)
	assert.ErrorIs(t, err, ErrGone)
}

// The backstop reaps nothing: a child's exit status is its own Wait's,
// however long that Wait takes to come (a harness that reaped zombies it
// took for orphans stole the statuses of other sections' commands).
func TestBackstopLeavesEveryZombieToItsWait(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 7")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sh: %v", err)
	}
	pid := cmd.Process.Pid
	p, err := Identify(pid)
	require.NoError(t, err)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, state, err := State(pid)
		require.NoError(t, err)
		if Finished(state) {
			break
		}
		require.False(t, time.Now().After(deadline), "sh did not exit within 5s (state %c)", state)
		time.Sleep(5 * time.Millisecond)
	}
	// Everything the backstop does at a section's end and at a sweep, over
	// a zombie that has waited well past any "it must be an orphan" age.
	for range 3 {
		live := exec.Command("sleep", "30") // so that Stop has one to wait for
		require.NoError(t, live.Start())
		done := make(chan struct{})
		go func() { live.Wait(); close(done) }()
		l, err := Identify(live.Process.Pid)
		require.NoError(t, err)
		Stop([]Proc{p, l}, 100*time.Millisecond)
		<-done
		_, _ = Sweep(t.TempDir())
		Descendants([]Proc{{Pid: os.Getpid()}})
		time.Sleep(600 * time.Millisecond)
	}
	_, state, err := State(pid)
	require.NoError(t, err, "someone reaped the zombie")
	assert.Equal(t, byte('Z'), state)
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "its own Wait must get its status")
	assert.Equal(t, 7, ee.ExitCode())
}
