// Package target resolves the program a section runs against: a profile of
// boards.yaml (the target of the board that lists the test's package, or
// the one REPROBOARD_TARGET names), and its binary, built once per test
// binary when the profile names a Go package.
package target

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/reproboard/reproboard/harness/config"
	"github.com/reproboard/reproboard/harness/excerpt"
)

// Environment variables that steer the choice.
const (
	// NameEnv picks a profile by name, over the target of the board that
	// lists the package; a difference is said.
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
	Path   string // absolute path of the binary
	Hash   string // sha256:<12 hex> of the binary, set by Resolve
	Choice Choice // why this profile, set by Resolve
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

// Choice is which profile a test binary runs against, and why.
type Choice struct {
	Name string
	// Why says where the choice came from, for the line every run prints:
	// "board guards lists package ./guards", "REPROBOARD_TARGET", ...
	Why string
	// Mismatch is set when an explicit REPROBOARD_TARGET differs from the
	// target of the board that lists the package: said, not silent.
	Mismatch string
}

// Name is the profile the environment asks for, or the default; see Choose.
func Name(cfg *config.Config) string { return Choose(cfg, "").Name }

// Choose picks the profile for the package in directory pkgDir ("" for
// the working directory, where go test runs a test binary): REPROBOARD_TARGET
// when set, else the target of the first board whose packages list the
// package, else the first board's target.
func Choose(cfg *config.Config, pkgDir string) Choice {
	if pkgDir == "" {
		pkgDir, _ = os.Getwd()
	}
	own, board, pkg := boardOf(cfg, pkgDir)
	if n := os.Getenv(NameEnv); n != "" {
		c := Choice{Name: n, Why: NameEnv}
		if b := os.Getenv(BoardEnv); b != "" {
			c.Why = "board " + b + " (" + NameEnv + ")"
		}
		if own != "" && own != n {
			c.Mismatch = fmt.Sprintf("%s=%s overrides %s, the target of board %s, which lists package %s", NameEnv, n, own, board, pkg)
		}
		return c
	}
	if own != "" {
		return Choice{Name: own, Why: fmt.Sprintf("board %s lists package %s", board, pkg)}
	}
	for _, b := range cfg.Boards {
		return Choice{Name: b.Target, Why: fmt.Sprintf("package %s is on no board of %s; the first board's target", pkg, filepath.Base(cfg.Path))}
	}
	if len(cfg.Targets) > 0 {
		return Choice{Name: cfg.Targets[0].Name, Why: "the first target: no board"}
	}
	return Choice{}
}

// BoardEnv is set by the board runner to the board being run.
const BoardEnv = "REPROBOARD_BOARD"

// boardOf finds the first board whose package patterns match the package
// in dir: its target, its name and the package as the board writes it.
func boardOf(cfg *config.Config, dir string) (target, board, pkg string) {
	root := filepath.Dir(cfg.Path)
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", "", dir
	}
	rel = filepath.ToSlash(rel)
	pkg = "./" + rel
	if rel == "." {
		pkg = "."
	}
	module := modulePath(root)
	for _, b := range cfg.Boards {
		for _, p := range b.Packages {
			if matchPackage(p, rel, module) {
				return b.Target, b.Name, pkg
			}
		}
	}
	return "", "", pkg
}

// matchPackage reports whether a go package pattern (./x, ./x/..., ./...,
// or an import path under module) names the package at rel ("." or a/b).
func matchPackage(pattern, rel, module string) bool {
	switch {
	case pattern == "." || pattern == "./":
		pattern = ""
	case strings.HasPrefix(pattern, "./"):
		pattern = strings.TrimPrefix(pattern, "./")
	case module != "" && (pattern == module || strings.HasPrefix(pattern, module+"/")):
		pattern = strings.TrimPrefix(strings.TrimPrefix(pattern, module), "/")
	default:
		return false
	}
	if rel == "." {
		rel = ""
	}
	if rest, ok := strings.CutSuffix(pattern, "..."); ok {
		rest = strings.TrimSuffix(rest, "/")
		return rest == "" || rel == rest || strings.HasPrefix(rel, rest+"/")
	}
	return strings.TrimSuffix(pattern, "/") == rel
}

// modulePath is the module line of root/go.mod, or "".
func modulePath(root string) string {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
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
	choice := Choose(cfg, "")
	name := choice.Name
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
		if choice.Mismatch != "" {
			err = fmt.Errorf("%w (%s)", err, choice.Mismatch)
		}
		err = &SetupError{err}
		failed[name] = err
		return nil, err
	}
	t.Choice = choice
	t.Hash = hashFile(t.Path)
	resolved[name] = t
	return t, nil
}

// Hash is a binary's identity for the line a run prints; see hashFile.
func Hash(path string) string { return hashFile(path) }

// hashFile is the binary's identity for the line a run prints: the first
// 12 hex digits of its SHA-256, or why it could not be read.
func hashFile(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unreadable: " + err.Error()
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:12]
}

// Describe is the one line that says which target and binary run, and why:
// "target demod: /tmp/.../demod (sha256:0123456789ab) — board guards lists package ./guards".
func (t *Target) Describe() string {
	s := fmt.Sprintf("target %s: %s (%s)", t.Name, t.Path, t.Hash)
	if t.Choice.Why != "" {
		s += " — " + t.Choice.Why
	}
	if t.Choice.Mismatch != "" {
		s += "; note: " + t.Choice.Mismatch
	}
	return s
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
	case prof.Binary != "" && !strings.Contains(prof.Binary, "/"):
		// A bare name is a program installed on the machine: found in PATH.
		p, err := exec.LookPath(prof.Binary)
		if err != nil {
			return nil, fmt.Errorf("target %s: %s is not installed: no %s in $PATH (%s); install it, or give binary: a path (%s)", name, prof.Binary, prof.Binary, os.Getenv("PATH"), prof.Pos)
		}
		t.Path = p
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
