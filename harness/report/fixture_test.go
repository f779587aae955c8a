package report

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/config"
)

// The reports are written from the board package's fixtures: the same
// go test -json streams and known_red whitelist its classification tests use.
const fixtures = "../board/testdata"

func collectFile(t *testing.T, name string) *board.Results {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtures, "events", name))
	require.NoError(t, err)
	defer f.Close()
	res, err := board.Collect(f)
	require.NoError(t, err)
	return res
}

func fixtureKnown(t *testing.T) []*config.KnownRed {
	t.Helper()
	cfg, err := config.Load(filepath.Join(fixtures, "board.yaml"))
	require.NoError(t, err)
	return cfg.KnownRed
}

// testKey names a test within its package ({pkg, ""} is the package).
type testKey struct{ pkg, test string }
