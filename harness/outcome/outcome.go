// Package outcome is the verdict model of reproboard: the seven outcomes a
// section can have, the exit-code rules of a board, and the test attributes
// that carry a section's outcome from `go test -json` to the board.
package outcome

import (
	"fmt"
	"hash/fnv"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Outcome is the classification of one section.
type Outcome string

const (
	Green        Outcome = "GREEN"
	Red          Outcome = "RED"
	KnownRed     Outcome = "KNOWN-RED"
	Fixed        Outcome = "FIXED"
	SetupFail    Outcome = "SETUP-FAIL"
	Inconclusive Outcome = "INCONCLUSIVE"
	// Flaky failed (RED or INCONCLUSIVE), then passed when the board re-ran
	// it alone (--rerun-fails): reported loudly with every attempt, gating
	// only under --strict.
	Flaky Outcome = "FLAKY"
)

// All lists the outcomes in report order, worst first.
var All = []Outcome{Red, Inconclusive, SetupFail, Flaky, Fixed, KnownRed, Green}

// Parse turns the text form back into an Outcome.
func Parse(s string) (Outcome, error) {
	for _, o := range All {
		if string(o) == strings.ToUpper(strings.TrimSpace(s)) {
			return o, nil
		}
	}
	return "", fmt.Errorf("unknown outcome %q (want one of GREEN, RED, KNOWN-RED, FIXED, SETUP-FAIL, INCONCLUSIVE, FLAKY)", s)
}

// Test attribute keys. A section's test records them with t.Attr so that
// `go test -json` carries them to the board as "attr" events.
const (
	AttrOutcome = "reproboard.outcome"
	AttrReason  = "reproboard.reason"
	// AttrArtifactPrefix prefixes the keys of artefact paths: samples, charts.
	AttrArtifactPrefix = "reproboard.artifact."
	// AttrMeasure carries a section's one-line measurement (LEAK_MEASURE ...).
	AttrMeasure = "reproboard.measure"
	// AttrBackstop says which left-over processes the backstop had to stop
	// when the section ended: its own steps should have stopped them.
	AttrBackstop = "reproboard.backstop"
)

// Exit codes of a board, the guard contract.
const (
	ExitGreen      = 0
	ExitRegression = 1
	ExitSetup      = 2
)

// Gating says how a board's exit code treats outcomes.
type Gating bool

const (
	Gate   Gating = true  // guard board: RED and INCONCLUSIVE fail it
	NoGate Gating = false // bug-repro board: redness is the data
)

// ExitCode applies the design's rules to a board's outcomes.
//
// On a gating board RED or INCONCLUSIVE exit 1; on a non-gating board they
// are reported and exit 0. SETUP-FAIL exits 2 unless there is a regression
// (exit 1). FIXED exits 1 only under strict. A board that executed nothing
// exits 2: nothing was verified.
func ExitCode(outcomes []Outcome, gating Gating, strict bool) int {
	if len(outcomes) == 0 {
		return ExitSetup
	}
	regression, setup := false, false
	for _, o := range outcomes {
		switch o {
		case Red, Inconclusive:
			if gating {
				regression = true
			}
		case Fixed, Flaky:
			if strict {
				regression = true
			}
		case SetupFail:
			setup = true
		}
	}
	switch {
	case regression:
		return ExitRegression
	case setup:
		return ExitSetup
	}
	return ExitGreen
}

// Mark records the section's outcome and a one-line reason on t. Later
// marks override earlier ones on the board (the last attr event wins).
func Mark(t testing.TB, o Outcome, reason string) {
	t.Helper()
	t.Attr(AttrOutcome, string(o))
	if reason != "" {
		t.Attr(AttrReason, oneLine(reason))
	}
}

// SetupFailf marks a precondition this section does not own as failed and
// stops the test: the board reports SETUP-FAIL, not RED.
func SetupFailf(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	Mark(t, SetupFail, msg)
	t.Fatalf("SETUP-FAIL: %s", msg)
}

// Require runs a precondition: a non-nil err marks SETUP-FAIL and stops.
func Require(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		SetupFailf(t, "%s: %v", what, err)
	}
}

// Artifact records the path of an artefact (kind is e.g. "chart", "samples").
func Artifact(t testing.TB, kind, path string) {
	t.Helper()
	t.Attr(AttrArtifactPrefix+kind, path)
}

// DryRun reports whether the board asked for a listing run: sections are
// created and skipped at once, so `go test -json` names every section
// without running any.
func DryRun() bool { return os.Getenv(EnvDryRun) == "1" }

// The variables by which the board asks a test binary for a listing run
// or one shard. They are for the board's own go test only: a child a test
// starts (package selftest) must not inherit them.
const (
	EnvDryRun = "REPROBOARD_DRYRUN"
	EnvShard  = "REPROBOARD_SHARD"
)

// SkipIfDryRun skips t in a listing run.
func SkipIfDryRun(t testing.TB) {
	t.Helper()
	if DryRun() {
		t.Skip("reproboard dry run: section listed, not run")
	}
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	const max = 300
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// Select skips t unless the board wants this section run: in a dry run
// every section is skipped (listed only), and under REPROBOARD_SHARD=k/n
// only the sections whose full test name hashes to shard k run. Every
// section the harness creates calls it first.
func Select(t testing.TB) {
	t.Helper()
	SkipIfDryRun(t)
	if k, n, ok := Shard(); ok && !InShard(t.Name(), k, n) {
		t.Skipf("reproboard shard %d/%d: section belongs to another shard", k, n)
	}
}

// Shard reads REPROBOARD_SHARD=k/n (1 <= k <= n).
func Shard() (k, n int, ok bool) {
	v := os.Getenv(EnvShard)
	if v == "" {
		return 0, 0, false
	}
	k, n, err := ParseShard(v)
	if err != nil {
		return 0, 0, false
	}
	return k, n, true
}

// ParseShard parses "k/n": exactly two decimal numbers, 1 <= k <= n.
func ParseShard(s string) (k, n int, err error) {
	m := shardRE.FindStringSubmatch(s)
	if m != nil {
		k, err = strconv.Atoi(m[1])
		if err == nil {
			n, err = strconv.Atoi(m[2])
		}
	}
	if m == nil || err != nil || n < 1 || k < 1 || k > n {
		return 0, 0, fmt.Errorf("shard %q: want k/n with 1 <= k <= n, e.g. 2/4", s)
	}
	return k, n, nil
}

var shardRE = regexp.MustCompile(`^([0-9]{1,6})/([0-9]{1,6})$`)

// InShard partitions sections deterministically by their full test name,
// so every shard of every CI job agrees without coordination. FNV-1a alone
// keeps its low bits poorly mixed (mod 2 would be a parity), so a
// finalizer (MurmurHash3's fmix64) spreads them first.
func InShard(name string, k, n int) bool {
	h := fnv.New64a()
	h.Write([]byte(name))
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return int(x%uint64(n)) == k-1
}
