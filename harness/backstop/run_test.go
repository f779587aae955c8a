package backstop

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run kept with REPROBOARD_KEEP survives the next runs' sweeps: it is
// reported once, then left for the user to remove.
func TestKeptRunSurvivesSweeps(t *testing.T) {
	base := t.TempDir()
	kept, _, err := StartRunWith(base, IsolationMarker)
	require.NoError(t, err)
	root := filepath.Join(kept.Dir, "1-section")
	require.NoError(t, os.Mkdir(root, 0o700))
	kept.Record(Proc{Pid: os.Getpid(), Start: 1}) // a stale record: not this process
	kept.Close(true)

	next, sweep, err := StartRunWith(base, IsolationMarker)
	require.NoError(t, err)
	defer next.Close(false)
	assert.DirExists(t, root, "a kept root was removed by another run's sweep")
	require.Len(t, sweep.Each, 1, "%q", sweep.Lines())
	assert.True(t, sweep.Each[0].Kept)
	assert.Regexp(t, `^swept dead run `+kept.ID+`: kept `+kept.Dir+` \(REPROBOARD_KEEP; rm -rf it when done\)$`, sweep.Lines()[0])
	assert.NotContains(t, sweep.Runs, kept.ID)

	again, err := Sweep(base)
	require.NoError(t, err)
	assert.Empty(t, again.Lines(), "a kept run is reported once")
	assert.DirExists(t, root)
}
