// Package target resolves the program a section runs against: a profile of
// boards.yaml picked by REPROBOARD_TARGET, and its binary, built once per
// test binary when the profile names a Go package.
package target

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/reproboard/reproboard/harness/config"
	"github.com/reproboard/reproboard/harness/excerpt"
)

// Environment variables that steer the choice.
const (
	// NameEnv picks a profile by name; the default is the first board's target.
	NameEnv = "REPROBOARD_TARGET"
	// BinaryEnv, set by the board runner after it built the target once,
	// is used instead of resolving the profile's binary again.
	BinaryEnv = "REPROBOARD_TARGET_BINARY"
	// ConfigEnv names the boards.yaml to read; the default is found by
	// walking up from the working directory.
	ConfigEnv = "REPROBOARD_CONFIG"
)

// Target is a resolved profile.
type Target struct {
	*config.Target
	Path string // absolute path of the binary
}

// LogPath is the target's log file inside a cache directory ("" if none).
func (t *Target) LogPath(cacheDir string) string {
	if t.Log == "" {
		return ""
	}
	return filepath.Join(cacheDir, t.Log)
}

// SetupError says the target could not be had: a precondition the section
// does not own, so the section is SETUP-FAIL, not RED.
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// buildTimeout bounds building a target: a cold build cache on two cores
// takes minutes, a hang must not take the test binary's whole -timeout.
const buildTimeout = 8 * time.Minute

var (
	mu       sync.Mutex
	resolved = map[string]*Target{}
	failed   = map[string]error{}
)

// FindConfig returns the boards.yaml to use.
func FindConfig() (string, error) {
	if p := os.Getenv(ConfigEnv); p != "" {
		return filepath.Abs(p)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "boards.yaml")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no boards.yaml in the working directory or above it (set %s)", ConfigEnv)
		}
		dir = parent
	}
}

// Name is the profile the environment asks for, or the default.
func Name(cfg *config.Config) string {
	if n := os.Getenv(NameEnv); n != "" {
		return n
	}
	if len(cfg.Boards) > 0 {
		return cfg.Boards[0].Target
	}
	if len(cfg.Targets) > 0 {
		return cfg.Targets[0].Name
	}
	return ""
}

// Resolve loads boards.yaml, picks the profile and finds or builds its
// binary into binDir. It is safe for concurrent use and builds at most once
// per profile per process, so binDir must live as long as the process (the
// first call's binDir is the one used); errors are *SetupError.
func Resolve(binDir string) (*Target, error) {
	path, err := FindConfig()
	if err != nil {
		return nil, &SetupError{err}
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, &SetupError{err}
	}
	name := Name(cfg)
	mu.Lock()
	defer mu.Unlock()
	if t, ok := resolved[name]; ok {
		return t, nil
	}
	if err, ok := failed[name]; ok {
		return nil, err
	}
	t, err := resolve(cfg, name, filepath.Dir(path), binDir)
	if err != nil {
		err = &SetupError{err}
		failed[name] = err
		return nil, err
	}
	resolved[name] = t
	return t, nil
}

func resolve(cfg *config.Config, name, root, binDir string) (*Target, error) {
	prof := cfg.Target(name)
	if prof == nil {
		var names []string
		for _, t := range cfg.Targets {
			names = append(names, t.Name)
		}
		return nil, fmt.Errorf("%s=%s: %s has no such target (it has %v)", NameEnv, name, cfg.Path, names)
	}
	t := &Target{Target: prof}
	switch {
	case os.Getenv(BinaryEnv) != "":
		t.Path = os.Getenv(BinaryEnv)
	case prof.Binary != "":
		t.Path = prof.Binary
		if !filepath.IsAbs(t.Path) {
			t.Path = filepath.Join(root, t.Path)
		}
	case prof.BinaryEnv != "":
		t.Path = os.Getenv(prof.BinaryEnv)
		if t.Path == "" {
			return nil, fmt.Errorf("target %s: its binary comes from $%s, which is not set (%s)", name, prof.BinaryEnv, prof.Pos)
		}
	case prof.Build != "":
		if err := os.MkdirAll(binDir, 0o755); err != nil {
			return nil, err
		}
		t.Path = filepath.Join(binDir, name)
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", t.Path, prof.Build)
		cmd.Dir = root
		cmd.WaitDelay = time.Second
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			err = fmt.Errorf("gave up after %s", buildTimeout)
		}
		if err != nil {
			return nil, fmt.Errorf("target %s did not build (go build %s): %v\n%s", name, prof.Build, err, excerpt.Excerpt(string(out), 0))
		}
	}
	abs, err := filepath.Abs(t.Path)
	if err != nil {
		return nil, err
	}
	t.Path = abs
	fi, err := os.Stat(t.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("target %s: binary %s does not exist", name, t.Path)
	case err != nil:
		return nil, fmt.Errorf("target %s: %w", name, err)
	case fi.IsDir() || fi.Mode()&0o111 == 0:
		return nil, fmt.Errorf("target %s: %s is not an executable file", name, t.Path)
	}
	return t, nil
}
