// Package config reads demod's environment: where state lives, where the
// daemon rendezvous lives, and the caps, each with a safe fallback.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults for the caps read from the environment.
const (
	DefaultEphemeralIdle   = 5 * time.Second
	DefaultQueryCacheMax   = 64
	DefaultCheckpointEvery = 50
	DefaultMaxClients      = 256
)

// Breaks are the test-only regressions DEMOD_TEST_BREAK may select (BUGS.md).
var Breaks = []string{
	"restart-under-storm",
	"stop-ignores-sessions",
	"start-new-pid",
	"stale-state",
	"hook-fails-closed",
	"port-blocks",
	"writer-gives-up",
}

// Warner reports each bad setting once per process, however often it is read.
type Warner struct {
	mu   sync.Mutex
	seen map[string]bool
	out  func(string)
}

// NewWarner sends each first warning for a key to out.
func NewWarner(out func(string)) *Warner {
	return &Warner{seen: map[string]bool{}, out: out}
}

// Warn emits msg unless a warning for key was already emitted.
func (w *Warner) Warn(key, msg string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[key] {
		return
	}
	w.seen[key] = true
	if w.out != nil {
		w.out(msg)
	}
}

// Getenv is os.Getenv's shape, so tests can pass a map lookup.
type Getenv func(string) string

// Duration reads a positive Go duration; anything else is the default.
func Duration(getenv Getenv, name string, def time.Duration, w *Warner) time.Duration {
	raw := strings.TrimSpace(getenv(name))
	if raw == "" {
		return def
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d <= 0 {
		w.Warn(name, fmt.Sprintf("warning: %s=%q is not a positive duration; using the default %s", name, raw, def))
		return def
	}
	return d
}

// PositiveInt reads an integer > 0; anything else is the default.
func PositiveInt(getenv Getenv, name string, def int, w *Warner) int {
	raw := strings.TrimSpace(getenv(name))
	if raw == "" {
		return def
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n <= 0 {
		w.Warn(name, fmt.Sprintf("warning: %s=%q is not a positive integer; using the default %d", name, raw, def))
		return def
	}
	return n
}

// NonNegativeInt reads an integer >= 0; anything else is the default.
func NonNegativeInt(getenv Getenv, name string, def int, w *Warner) int {
	raw := strings.TrimSpace(getenv(name))
	if raw == "" {
		return def
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		w.Warn(name, fmt.Sprintf("warning: %s=%q is not a non-negative integer; using the default %d", name, raw, def))
		return def
	}
	return n
}

// Bool reads 1/true/yes/on as true.
func Bool(getenv Getenv, name string) bool {
	switch strings.ToLower(strings.TrimSpace(getenv(name))) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// Env is everything demod reads from its environment.
type Env struct {
	CacheDir   string
	RuntimeDir string
	// RuntimeVar names where RuntimeDir came from, for error messages.
	RuntimeVar string

	EphemeralIdle   time.Duration
	QueryCacheMax   int
	CheckpointEvery int
	MaxClients      int
	LeakBytes       int
	Fix581          bool
	Break           string
}

// Broken reports whether the test-only breakage name is selected.
func (e Env) Broken(name string) bool { return e.Break == name }

// Load reads the caps and resolves (but does not validate) the directories.
func Load(getenv Getenv, w *Warner) Env {
	e := Env{
		CacheDir:        cacheDir(getenv),
		EphemeralIdle:   Duration(getenv, "DEMOD_EPHEMERAL_IDLE", DefaultEphemeralIdle, w),
		QueryCacheMax:   PositiveInt(getenv, "DEMOD_QUERY_CACHE_MAX", DefaultQueryCacheMax, w),
		CheckpointEvery: PositiveInt(getenv, "DEMOD_CHECKPOINT_EVERY", DefaultCheckpointEvery, w),
		MaxClients:      PositiveInt(getenv, "DEMOD_MAX_CLIENTS", DefaultMaxClients, w),
		LeakBytes:       NonNegativeInt(getenv, "DEMOD_LEAK_BYTES", 0, w),
		Fix581:          Bool(getenv, "DEMOD_FIX_581"),
	}
	e.RuntimeDir, e.RuntimeVar = runtimeDir(getenv)
	if b := strings.TrimSpace(getenv("DEMOD_TEST_BREAK")); b != "" {
		known := false
		for _, k := range Breaks {
			known = known || k == b
		}
		if known {
			e.Break = b
		} else {
			w.Warn("DEMOD_TEST_BREAK", fmt.Sprintf("warning: DEMOD_TEST_BREAK=%q is not a known breakage (%s); ignoring it", b, strings.Join(Breaks, ", ")))
		}
	}
	return e
}

func cacheDir(getenv Getenv) string {
	if d := getenv("DEMOD_CACHE_DIR"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "demod")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("demod-cache-%d", os.Getuid()))
}

// runtimeDir returns the rendezvous parent and the variable it came from.
// DEMOD_RUNTIME_DIR wins; the fallbacks exist for interactive use, guards
// always set the variable.
func runtimeDir(getenv Getenv) (string, string) {
	if d := getenv("DEMOD_RUNTIME_DIR"); d != "" {
		return d, "DEMOD_RUNTIME_DIR"
	}
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		return d, "XDG_RUNTIME_DIR"
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("demod-%d", os.Getuid())), ""
}

// PrepareRuntimeDir validates the rendezvous parent. Only the os.TempDir
// fallback may be created: an explicit variable is the caller's isolation
// promise, and silently creating its directory would hide a typo.
func (e Env) PrepareRuntimeDir() error {
	label := e.RuntimeVar
	if label == "" {
		label = "runtime dir"
		if err := os.MkdirAll(e.RuntimeDir, 0o700); err != nil {
			return fmt.Errorf("%s %s: %w", label, e.RuntimeDir, err)
		}
	}
	return ValidateRuntimeDir(label, e.RuntimeDir)
}

// ValidateRuntimeDir checks that dir exists, is a real directory (not a
// symlink) and belongs to this user: another user's directory could
// intercept the socket. label names the setting in the error.
func ValidateRuntimeDir(label, dir string) error {
	label += " " + dir
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: does not exist (create it first; demod never creates it)", label)
	}
	if err != nil {
		return fmt.Errorf("%s: %v", label, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%s: is a symlink (point it at the real directory)", label)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: not a directory", label)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s: owned by uid %d, not by the current uid %d", label, st.Uid, os.Getuid())
	}
	return nil
}
