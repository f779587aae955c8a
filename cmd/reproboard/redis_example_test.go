package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The redis example (examples/redis, a module of its own guarding the
// Debian redis-server) runs from its boards file: GREEN guards, the true
// positive KNOWN-RED and the true negative GREEN. Without redis-server
// every section is SETUP-FAIL and says so; CI installs it (.ci/run), so
// there it must be GREEN.
func TestRedisExample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the redis example boards")
	}
	t.Setenv("GOWORK", "off")
	t.Setenv("GOFLAGS", "")
	t.Setenv("NO_COLOR", "1")
	cfg, err := filepath.Abs(filepath.Join("..", "..", "examples", "redis", "boards.yaml"))
	require.NoError(t, err)
	_, errServer := exec.LookPath("redis-server")
	_, errCLI := exec.LookPath("redis-cli")
	installed := errServer == nil && errCLI == nil

	t.Run("as installed", func(t *testing.T) {
		if !installed {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true but redis-server or redis-cli is not in PATH: .ci/run installs redis-server and redis-tools")
			}
			t.Log("redis-server is not installed: the forced case below shows its SETUP-FAIL")
			return
		}
		out := t.TempDir()
		start := time.Now()
		code, stdout, stderr := invoke(t, "run", "--config", cfg, "--out", out)
		t.Logf("the redis example boards took %s", time.Since(start).Round(100*time.Millisecond))
		require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
		assert.Equal(t, map[string]string{
			"TestGuards/lifecycle": "GREEN", "TestGuards/client-storm": "GREEN",
			"TestGuards/crash-restart": "GREEN", "TestGuards/port-busy": "GREEN",
		}, outcomes(readBoard(t, filepath.Join(out, "redis.json"))), stdout)
		assert.Equal(t, map[string]string{
			"TestRepro/distinct-keys": "KNOWN-RED", "TestRepro/same-key": "GREEN",
		}, outcomes(readBoard(t, filepath.Join(out, "redis-leaks.json"))), stdout)
		assert.Regexp(t, `target redis: /\S+/redis-server \(sha256:[0-9a-f]{12}\)`, stderr)
	})

	t.Run("redis missing", func(t *testing.T) {
		t.Setenv("PATH", pathWithout(t, "redis-"))
		out := t.TempDir()
		code, stdout, stderr := invoke(t, "run", "--config", cfg, "--out", out)
		require.Equal(t, 2, code, "nothing verified is exit 2\n%s\n%s", stdout, stderr)
		for _, name := range []string{"redis", "redis-leaks"} {
			b := readBoard(t, filepath.Join(out, name+".json"))
			require.NotEmpty(t, b.Sections, "board %s lists its sections\n%s", name, stdout)
			for _, s := range b.Sections {
				assert.Equal(t, "SETUP-FAIL", string(s.Outcome), s.Test)
				assert.Contains(t, s.Reason, "target redis: redis-server is not installed: no redis-server in $PATH", s.Test)
			}
		}
		assert.Contains(t, stdout, "SETUP-FAIL")
	})
}

// pathWithout is a PATH of one directory holding links to every program
// of the present PATH except those whose names start with prefix.
func pathWithout(t *testing.T, prefix string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, prefix) {
				continue
			}
			link := filepath.Join(dir, name)
			if _, err := os.Lstat(link); err == nil {
				continue // an earlier PATH entry wins, as in a lookup
			}
			_ = os.Symlink(filepath.Join(d, name), link)
		}
	}
	return dir
}
