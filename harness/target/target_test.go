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

// A package listed by a board runs against that board's target; an
// explicit REPROBOARD_TARGET wins and the difference is said.
func TestChooseByTheBoardThatListsThePackage(t *testing.T) {
	cfg := loadProfiles(t, `
targets:
  one: {binary: ./one}
  two: {binary: ./two}
  three: {binary: ./three}
boards:
  a: {packages: [./a/...], target: one, gating: true}
  b: {packages: [./b, example.com/m/c/...], target: two, gating: true}
`)
	root := filepath.Dir(cfg.Path)
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n"), 0o644))
	t.Setenv(NameEnv, "")
	t.Setenv(BoardEnv, "")
	for dir, want := range map[string]Choice{
		"a":     {Name: "one", Why: "board a lists package ./a"},
		"a/x/y": {Name: "one", Why: "board a lists package ./a/x/y"},
		"b":     {Name: "two", Why: "board b lists package ./b"},
		"c/d":   {Name: "two", Why: "board b lists package ./c/d"},
		"bb":    {Name: "one", Why: "package ./bb is on no board of boards.yaml; the first board's target"},
		"b/sub": {Name: "one", Why: "package ./b/sub is on no board of boards.yaml; the first board's target"},
	} {
		assert.Equal(t, want, Choose(cfg, filepath.Join(root, dir)), dir)
	}
	t.Setenv(NameEnv, "three")
	got := Choose(cfg, filepath.Join(root, "b"))
	assert.Equal(t, "three", got.Name)
	assert.Equal(t, "REPROBOARD_TARGET=three overrides two, the target of board b, which lists package ./b", got.Mismatch)
	t.Setenv(NameEnv, "two")
	assert.Empty(t, Choose(cfg, filepath.Join(root, "b")).Mismatch, "the same target is no mismatch")
}

func TestBareBinaryNameIsFoundInPath(t *testing.T) {
	cfg := loadProfiles(t, "targets:\n  sh: {binary: sh}\n  nope: {binary: reproboard-no-such-program}\nboards:\n  b: {packages: [./...], target: sh, gating: true}\n")
	root := filepath.Dir(cfg.Path)
	t.Setenv(BinaryEnv, "")
	got, err := resolve(cfg, "sh", root, t.TempDir())
	require.NoError(t, err)
	assert.True(t, filepath.IsAbs(got.Path), got.Path)
	_, err = resolve(cfg, "nope", root, t.TempDir())
	assert.ErrorContains(t, err, "target nope: reproboard-no-such-program is not installed: no reproboard-no-such-program in $PATH")
}
