package target

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/reproboard/reproboard/harness/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func loadProfiles(t *testing.T, yaml string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "boards.yaml")
	require.NoError(t, os.WriteFile(p, []byte(yaml), 0o644))
	cfg, err := config.Load(p)
	require.NoError(t, err)
	return cfg
}

const profiles = `
targets:
  fromenv:
    binary_env: REPROBOARD_TEST_NO_SUCH_VAR
    cache_var: X_CACHE
    runtime_var: X_RUNTIME
  missing:
    binary: bin/not-there
    cache_var: X_CACHE
    runtime_var: X_RUNTIME
  broken:
    build: ./does/not/exist
    cache_var: X_CACHE
    runtime_var: X_RUNTIME
boards:
  b:
    packages: [./...]
    target: fromenv
    gating: true
`

func TestMissingBinariesSayWhy(t *testing.T) {
	cfg := loadProfiles(t, profiles)
	root := filepath.Dir(cfg.Path)
	cases := map[string]string{
		"fromenv": "target fromenv: its binary comes from $REPROBOARD_TEST_NO_SUCH_VAR, which is not set",
		"missing": "target missing: binary " + filepath.Join(root, "bin/not-there") + " does not exist",
		"broken":  "target broken did not build (go build ./does/not/exist)",
	}
	for name, want := range cases {
		_, err := resolve(cfg, name, root, t.TempDir())
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), want)
	}
	_, err := resolve(cfg, "nope", root, t.TempDir())
	assert.ErrorContains(t, err, "has no such target (it has [fromenv missing broken])")
}

func TestBinaryFromEnvironmentAndOverride(t *testing.T) {
	cfg := loadProfiles(t, profiles)
	root := filepath.Dir(cfg.Path)
	exe, err := os.Executable()
	require.NoError(t, err)
	t.Setenv("REPROBOARD_TEST_NO_SUCH_VAR", exe)
	got, err := resolve(cfg, "fromenv", root, t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, exe, got.Path)

	// The board's prebuilt binary wins over the profile.
	t.Setenv(BinaryEnv, exe)
	got, err = resolve(cfg, "missing", root, t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, exe, got.Path)
}

func TestNotExecutable(t *testing.T) {
	cfg := loadProfiles(t, profiles)
	root := filepath.Dir(cfg.Path)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "bin/not-there"), []byte("text"), 0o644))
	_, err := resolve(cfg, "missing", root, t.TempDir())
	assert.ErrorContains(t, err, "is not an executable file")
}

func TestNameDefaultsToTheFirstBoardsTarget(t *testing.T) {
	cfg := loadProfiles(t, profiles)
	t.Setenv(NameEnv, "")
	assert.Equal(t, "fromenv", Name(cfg))
	t.Setenv(NameEnv, "broken")
	assert.Equal(t, "broken", Name(cfg))
}

func TestResolveReportsSetupErrors(t *testing.T) {
	cfg := loadProfiles(t, profiles)
	t.Setenv(ConfigEnv, cfg.Path)
	t.Setenv(NameEnv, "fromenv")
	t.Setenv(BinaryEnv, "")
	_, err := Resolve(t.TempDir())
	var se *SetupError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Error(), "which is not set")
}
