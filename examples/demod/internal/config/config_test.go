package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) Getenv { return func(k string) string { return m[k] } }

func TestBadCapsFallBackToDefaultWithOneWarning(t *testing.T) {
	for _, bad := range []string{"bogus", "0", "-3", "-1s", "0s"} {
		t.Run(bad, func(t *testing.T) {
			var warnings []string
			w := NewWarner(func(m string) { warnings = append(warnings, m) })
			get := env(map[string]string{
				"DEMOD_EPHEMERAL_IDLE":  bad,
				"DEMOD_QUERY_CACHE_MAX": bad,
			})
			// Read twice: a cap read on every request must not warn every time.
			for range 2 {
				e := Load(get, w)
				if e.EphemeralIdle != DefaultEphemeralIdle {
					t.Errorf("DEMOD_EPHEMERAL_IDLE=%q: got %s, want the default %s", bad, e.EphemeralIdle, DefaultEphemeralIdle)
				}
				if e.QueryCacheMax != DefaultQueryCacheMax {
					t.Errorf("DEMOD_QUERY_CACHE_MAX=%q: got %d, want the default %d", bad, e.QueryCacheMax, DefaultQueryCacheMax)
				}
			}
			if len(warnings) != 2 {
				t.Fatalf("want exactly one warning per bad variable (2), got %d: %q", len(warnings), warnings)
			}
			for _, name := range []string{"DEMOD_EPHEMERAL_IDLE", "DEMOD_QUERY_CACHE_MAX"} {
				if !strings.Contains(strings.Join(warnings, "\n"), name) {
					t.Errorf("no warning names %s: %q", name, warnings)
				}
			}
		})
	}
}

func TestGoodCapsAreUsedSilently(t *testing.T) {
	var warnings []string
	w := NewWarner(func(m string) { warnings = append(warnings, m) })
	e := Load(env(map[string]string{
		"DEMOD_EPHEMERAL_IDLE":  "500ms",
		"DEMOD_QUERY_CACHE_MAX": "8",
		"DEMOD_LEAK_BYTES":      "0",
		"DEMOD_FIX_581":         "1",
		"DEMOD_TEST_BREAK":      "stale-state",
	}), w)
	if e.EphemeralIdle != 500*time.Millisecond || e.QueryCacheMax != 8 || e.LeakBytes != 0 || !e.Fix581 || !e.Broken("stale-state") {
		t.Errorf("settings not applied: %+v", e)
	}
	if len(warnings) != 0 {
		t.Errorf("good values warned: %q", warnings)
	}
}

func TestNegativeLeakBytesAndUnknownBreakAreRejected(t *testing.T) {
	var warnings []string
	w := NewWarner(func(m string) { warnings = append(warnings, m) })
	e := Load(env(map[string]string{"DEMOD_LEAK_BYTES": "-5", "DEMOD_TEST_BREAK": "everything"}), w)
	if e.LeakBytes != 0 || e.Break != "" {
		t.Errorf("got LeakBytes=%d Break=%q, want 0 and none", e.LeakBytes, e.Break)
	}
	if len(warnings) != 2 {
		t.Errorf("want 2 warnings, got %q", warnings)
	}
}

func TestRuntimeDirIsValidatedNeverCreated(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(base, link); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(base, "missing")
	cases := map[string]string{
		missing: "does not exist",
		file:    "not a directory",
		link:    "is a symlink",
	}
	for dir, want := range cases {
		e := Load(env(map[string]string{"DEMOD_RUNTIME_DIR": dir}), nil)
		err := e.PrepareRuntimeDir()
		if err == nil || !strings.Contains(err.Error(), "DEMOD_RUNTIME_DIR "+dir+": "+want) {
			t.Errorf("%s: got %v, want an error containing %q", dir, err, want)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("PrepareRuntimeDir created %s", missing)
	}
	e := Load(env(map[string]string{"DEMOD_RUNTIME_DIR": base}), nil)
	if err := e.PrepareRuntimeDir(); err != nil {
		t.Errorf("a real, owned directory was rejected: %v", err)
	}
}
