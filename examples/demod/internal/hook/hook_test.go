package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func noDaemon(json.RawMessage) (json.RawMessage, bool, error) { return nil, false, nil }

func runHook(o Options) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Run(strings.NewReader(`{"hook_event_name":"PreToolUse","tool_input":{"pattern":"x"}}`), &out, &errb, o)
	return code, out.String(), errb.String()
}

func TestFailsOpenAndNoticesOnce(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache") // not created yet: the hook must create it
	o := Options{CacheDir: cache, Ask: noDaemon}
	code, out, errs := runHook(o)
	if code != 0 || !strings.Contains(out, `"systemMessage"`) || !strings.Contains(errs, "no demod daemon is running") {
		t.Fatalf("first call: rc=%d stdout=%q stderr=%q; want 0, a systemMessage and the notice", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(cache, MarkerName)); err != nil {
		t.Fatalf("marker not stamped: %v", err)
	}
	code, out, _ = runHook(o)
	if code != 0 || out != "" {
		t.Errorf("second call: rc=%d stdout=%q; want 0 and silence", code, out)
	}
}

func TestFailsClosedBreakage(t *testing.T) {
	code, _, errs := runHook(Options{CacheDir: t.TempDir(), Ask: noDaemon, FailsClosed: true})
	if code != 1 || !strings.Contains(errs, "error:") {
		t.Errorf("hook-fails-closed: rc=%d stderr=%q; want 1 and an error", code, errs)
	}
}

func TestWithDaemonPrintsAugmentationOrNothing(t *testing.T) {
	aug := Options{CacheDir: t.TempDir(), Ask: func(json.RawMessage) (json.RawMessage, bool, error) {
		return json.RawMessage(`{"hookSpecificOutput":{}}`), true, nil
	}}
	if code, out, _ := runHook(aug); code != 0 || !strings.Contains(out, "hookSpecificOutput") {
		t.Errorf("augmenting daemon: rc=%d stdout=%q", code, out)
	}
	broken := Options{CacheDir: t.TempDir(), Ask: func(json.RawMessage) (json.RawMessage, bool, error) {
		return nil, true, errors.New("boom")
	}}
	if code, out, _ := runHook(broken); code != 0 || out != "" {
		t.Errorf("a failing daemon must still fail open: rc=%d stdout=%q", code, out)
	}
}
