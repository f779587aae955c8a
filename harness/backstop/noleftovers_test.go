package backstop

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// scripts/no-leftovers.sh, at the end of make test, kills and reports the
// processes of the runs under its base only: a marked process of a live
// run under another base survives it.
func TestNoLeftoversTouchesOnlyItsOwnRuns(t *testing.T) {
	script, err := filepath.Abs("../../scripts/no-leftovers.sh")
	require.NoError(t, err)
	mine, other := t.TempDir(), t.TempDir()

	// A live run under another base, and one under this base (as at the
	// end of make test, its runs are done, but a held lock keeps every
	// other run's sweep off this test's processes).
	otherLock, myLock := filepath.Join(other, "rb-0badc0de.lock"), filepath.Join(mine, "rb-deadbeef.lock")
	for _, lock := range []string{otherLock, myLock} {
		f, err := os.Create(lock)
		require.NoError(t, err)
		defer f.Close()
		require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_EX))
	}
	// Up to three tries: until every checkout on a shared machine runs this
	// script, an older one kills every marked process it sees, ours too.
	// (A held lock keeps the sweeps of current runs off them.)
	for try := 1; ; try++ {
		live := marked(t, "0badc0de/TestLive", otherLock)
		out, err := exec.Command(script, mine).CombinedOutput()
		require.NoError(t, err, "nothing of %s runs, yet:\n%s", mine, out)
		assert.Contains(t, string(out), "no process of the runs under")

		// A left-over of a run under this base: killed, named, a failure.
		left := marked(t, "deadbeef/TestLeft", myLock)
		out, err = exec.Command(script, mine).CombinedOutput()
		if !strings.Contains(string(out), "deadbeef") && !left.Alive() || !live.Alive() && !strings.Contains(string(out), "0badc0de") {
			if try < 3 {
				t.Logf("try %d: a marked process of this test was killed by someone else; again", try)
				continue
			}
		}
		require.Error(t, err, "a left-over went unreported:\n%s", out)
		assert.Regexp(t, `pid \d+ \(found by marker\) section deadbeef/TestLeft: sleep 61`, string(out))
		require.Eventually(t, func() bool { return !left.Alive() }, 5*time.Second, 20*time.Millisecond, "not killed:\n%s", out)
		assert.True(t, live.Alive(), "no-leftovers killed a live run's process under another base:\n%s", out)
		assert.NotContains(t, string(out), "0badc0de")
		return
	}
}

// marked starts `sleep 61` carrying a marker and a run lock, as a section
// of that run would; the test stops it at its end.
func marked(t *testing.T, marker, lock string) Proc {
	cmd := exec.Command("sleep", "61")
	cmd.Env = append(os.Environ(), MarkerVar+"="+marker, RunLockVar+"="+lock)
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	p, err := Identify(cmd.Process.Pid)
	require.NoError(t, err)
	return p
}
