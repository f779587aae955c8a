package board

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/reproboard/reproboard/harness/config"
	"github.com/reproboard/reproboard/harness/excerpt"
	"github.com/reproboard/reproboard/harness/outcome"
)

// Schema names the version of the board's JSON form. A change that could
// break a reader (a renamed or retyped field) needs a new version.
const Schema = "reproboard.board/v1"

// Board is a classified board: what every report shows and what the JSON
// report stores, so a board read back from JSON (for merge) reports the
// same as the one that was run.
type Board struct {
	Schema   string `json:"schema"`
	Name     string `json:"board"`
	Target   string `json:"target"`
	Gating   bool   `json:"gating"`
	Strict   bool   `json:"strict"`
	Platform string `json:"platform"`
	Shard    string `json:"shard,omitempty"` // "k/n" of a sharded run
	// Run identifies the run a shard belongs to, so merge can check it has
	// every shard of one run; set on every run, sharded or not.
	Run    *RunKey  `json:"run_key,omitempty"`
	Merged []string `json:"merged,omitempty"` // the shards ("k/n") a merged board was made of
	// Partial lists the shards a merge did not have (--allow-partial): the
	// board verified only part of its sections and says PARTIAL everywhere.
	Partial    []string  `json:"partial,omitempty"`
	Events     string    `json:"events,omitempty"` // raw go test -json file, relative to the JSON file
	RunInfo    *RunInfo  `json:"run,omitempty"`    // when, commit, versions; nil on a board from an older reproboard
	ExitCode   int       `json:"exit_code"`
	ExitReason string    `json:"exit_reason"`
	Sections   []Section `json:"sections"`
	Skipped    []Skipped `json:"skipped,omitempty"`
	Problems   []Problem `json:"problems,omitempty"`
	Counts     Counts    `json:"counts"`
}

// Section is one classified section.
type Section struct {
	Package  string          `json:"package"`
	Test     string          `json:"test"`
	Outcome  outcome.Outcome `json:"outcome"`
	Issue    int             `json:"issue"` // 0: no known_red entry applies
	Reason   string          `json:"reason"`
	Duration float64         `json:"duration_s"`
	// Excerpt is the tail of the output (excerpt.DefaultLimit bytes) of a
	// section that is not GREEN; empty for GREEN.
	Excerpt   string            `json:"excerpt"`
	Artifacts map[string]string `json:"artifacts"` // kind -> path, from reproboard.artifact.<kind>
	Measure   string            `json:"measure"`   // one line per metric
	// Attempts are the section's runs in order, when it ran more than once
	// (--rerun-fails): the first from the parallel run, then each re-run
	// alone. Empty for a section that ran once.
	Attempts []Attempt `json:"attempts,omitempty"`
}

// Attempt is one run of a section: a plain record, the same in the JSON
// report and in a run history.
type Attempt struct {
	Outcome  outcome.Outcome `json:"outcome"`
	Reason   string          `json:"reason"`
	Duration float64         `json:"duration_s"`
}

// RunKey names one run of one board: the same for every shard of it.
type RunKey struct {
	// Config is the SHA-256 of the boards.yaml the run read ("sha256:…").
	Config string `json:"config"`
	// Listing is the SHA-256 of the board's sorted section names, as the
	// dry run listed them before sharding ("sha256:…").
	Listing string `json:"listing"`
	// Assigned are the sections this run (this shard) was given.
	Assigned []string `json:"assigned"`
}

// Skipped is a section that skipped for its own reasons (not a dry run,
// not another shard's): shown, never counted.
type Skipped struct {
	Package string `json:"package"`
	Test    string `json:"test"`
	Reason  string `json:"reason"`
}

// Counts holds the number of sections per outcome name, and "total".
type Counts map[string]int

// Options are what Classify needs besides the results.
type Options struct {
	Board, Target  string
	Gating, Strict bool
	Platform       string // GOOS/GOARCH for known_red platforms; config.Platform() when empty
	Shard          string
	Run            *RunKey
	// Expected lists the sections a dry run found for this run (this
	// shard's only); those that never ran are reported as a problem.
	Expected []string
}

// Classify turns a run's results into a board: every executed section gets
// its outcome, known_red entries are applied, and the exit code computed.
func Classify(res *Results, known []*config.KnownRed, opts Options) *Board {
	if opts.Platform == "" {
		opts.Platform = config.Platform()
	}
	b := &Board{
		Schema: Schema, Name: opts.Board, Target: opts.Target,
		Gating: opts.Gating, Strict: opts.Strict, Platform: opts.Platform, Shard: opts.Shard, Run: opts.Run,
		Sections: []Section{},
		Problems: append([]Problem(nil), res.Problems...),
	}
	for _, r := range res.Sections {
		switch {
		case r.Executed():
			b.Sections = append(b.Sections, ClassifySection(r, known, opts.Platform))
		case !r.Listed() && !r.OtherShard():
			b.Skipped = append(b.Skipped, Skipped{Package: r.Package, Test: r.Test, Reason: r.SkipReason})
		}
	}
	if p, ok := notRun(res, opts.Expected); ok {
		b.Problems = append(b.Problems, p)
	}
	b.Score()
	return b
}

// notRun finds listed sections that left no trace in the run: the test
// binary stopped (a panic, a timeout) before reaching them.
func notRun(res *Results, expected []string) (Problem, bool) {
	var missing []string
	for _, want := range expected {
		found := false
		for _, s := range res.Sections {
			if s.Test == want || strings.HasPrefix(s.Test, want+"/") || strings.HasPrefix(want, s.Test+"/") {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, want)
		}
	}
	if len(missing) == 0 {
		return Problem{}, false
	}
	shown := missing
	if len(shown) > 10 {
		shown = append(shown[:10:10], fmt.Sprintf("and %d more", len(missing)-10))
	}
	return Problem{
		Kind:    ProblemNotRun,
		Message: fmt.Sprintf("%d listed section(s) never ran, the test binary stopped before them (see the failures above): %s", len(missing), strings.Join(shown, ", ")),
	}, true
}

// ClassifySection gives one executed section its outcome.
//
// go test's verdict comes first; the reproboard.outcome attribute can only
// refine it: a failed test marked SETUP-FAIL or INCONCLUSIVE is that, any
// other failure is RED; a passed test is GREEN unless it is marked
// INCONCLUSIVE (the verdict's measurement could not be taken, and a
// passing test must never hide that). A passed test marked RED is GREEN:
// go test said it passed. Then the known_red entry for the test, if one
// applies to platform: RED whose output matches the entry's signature is
// KNOWN-RED; RED that does not match stays RED (the bug changed); GREEN is
// FIXED.
func ClassifySection(r SectionResult, known []*config.KnownRed, platform string) Section {
	s := Section{
		Package:   r.Package,
		Test:      r.Test,
		Duration:  math.Round(r.Elapsed.Seconds()*1000) / 1000,
		Artifacts: map[string]string{},
		Measure:   measure(r),
		Reason:    r.Attrs[outcome.AttrReason],
	}
	for k, v := range r.Attrs {
		if kind, ok := strings.CutPrefix(k, outcome.AttrArtifactPrefix); ok && kind != "" {
			s.Artifacts[kind] = v
		}
	}
	marked, _ := outcome.Parse(r.Attrs[outcome.AttrOutcome])
	switch {
	case r.Action == "pass" && marked == outcome.Inconclusive:
		s.Outcome = outcome.Inconclusive
	case r.Action == "pass":
		s.Outcome = outcome.Green
	case marked == outcome.SetupFail || marked == outcome.Inconclusive:
		s.Outcome = marked
	default:
		s.Outcome = outcome.Red
	}
	if k := entryFor(known, r.Test, platform); k != nil {
		s.Issue = k.Issue
		switch s.Outcome {
		case outcome.Red:
			if signatureMatches(k, r) {
				s.Outcome, s.Reason = outcome.KnownRed, k.Reason
			} else {
				s.Reason = fmt.Sprintf("known-red #%d but the failure signature changed: someone must look", k.Issue)
			}
		case outcome.Green:
			s.Outcome = outcome.Fixed
			s.Reason = fmt.Sprintf("now GREEN — promote to a guard, drop the known_red entry, close #%d", k.Issue)
		}
	}
	if s.Outcome != outcome.Green {
		if s.Reason == "" {
			s.Reason = failureReason(r)
		}
		s.Excerpt = excerpt.OfTail(r.Output, excerpt.DefaultLimit)
	}
	if bs := r.Attrs[outcome.AttrBackstop]; bs != "" {
		// Said on every outcome: a green section that left a daemon behind
		// passed only because the backstop cleaned up after it.
		s.Reason = strings.TrimPrefix(s.Reason+"; backstop "+bs, "; ")
	}
	s.Reason = excerpt.OneLine(s.Reason, 300)
	return s
}

func entryFor(known []*config.KnownRed, test, platform string) *config.KnownRed {
	for _, k := range known {
		if k.Test == test && k.AppliesTo(platform) {
			return k
		}
	}
	return nil
}

// signatureMatches matches the pinned signature against the section's
// failure output, and against its reason and measure attributes, which a
// repro may record instead of printing.
func signatureMatches(k *config.KnownRed, r SectionResult) bool {
	if k.Signature == nil {
		return false
	}
	text := r.Output + "\n" + r.Attrs[outcome.AttrReason] + "\n" + r.Attrs[outcome.AttrMeasure]
	return k.Signature.MatchString(text)
}

func failureReason(r SectionResult) string {
	switch {
	case r.Incomplete:
		return "did not finish: the test binary stopped while it ran: " + failureLine(r.Output)
	case r.Parent:
		return "the parent test failed outside its subtests: " + failureLine(r.Output)
	case r.Action == "pass":
		return "marked INCONCLUSIVE"
	}
	return failureLine(r.Output)
}

// measure is the section's reproboard.measure attribute, or else every
// distinct LEAK_MEASURE line it printed (one per metric measured), one a
// line, in order.
func measure(r SectionResult) string {
	if m := r.Attrs[outcome.AttrMeasure]; m != "" {
		return m
	}
	var lines []string
	for _, line := range strings.Split(r.Output, "\n") {
		i := strings.Index(line, "LEAK_MEASURE")
		if i < 0 {
			continue
		}
		// Cut at the marker: the same line may come nested in a failure
		// message with another indentation.
		if m := strings.TrimSpace(line[i:]); !slices.Contains(lines, m) {
			lines = append(lines, m)
		}
	}
	return strings.Join(lines, "\n")
}

// Score sorts the sections and recomputes counts, exit code and its
// reason from them; merge calls it after combining shards.
//
// Problems (a package that did not build, sections that never ran) count
// as SETUP-FAIL: exit 2 unless a regression makes it 1. A board on which
// no section ran exits 2: nothing was verified (a shard that was given no
// section exits 0, and leaves the verdict to the merge).
func (b *Board) Score() {
	sort.SliceStable(b.Sections, func(i, j int) bool {
		x, y := b.Sections[i], b.Sections[j]
		return x.Package < y.Package || x.Package == y.Package && x.Test < y.Test
	})
	b.Counts = Counts{"total": len(b.Sections)}
	var outs []outcome.Outcome
	for _, o := range outcome.All {
		b.Counts[string(o)] = 0
	}
	for _, s := range b.Sections {
		b.Counts[string(s.Outcome)]++
		outs = append(outs, s.Outcome)
	}
	if len(b.Sections) == 0 && b.Shard != "" && len(b.Problems) == 0 && len(b.Partial) == 0 {
		// The hash gave this shard nothing; the merge of all shards still
		// exits 2 if the whole board verified nothing.
		b.ExitCode = outcome.ExitGreen
		b.ExitReason = "shard " + b.Shard + " holds no section of this board; the merge of all shards decides"
		return
	}
	if len(b.Sections) == 0 {
		b.ExitCode = outcome.ExitSetup
		b.ExitReason = "no section ran: nothing was verified"
		if len(b.Problems) > 0 {
			b.ExitReason += "; " + b.Problems[0].Message
		}
		return
	}
	for range b.Problems {
		outs = append(outs, outcome.SetupFail)
	}
	b.ExitCode = outcome.ExitCode(outs, outcome.Gating(b.Gating), b.Strict)
	b.ExitReason = b.exitReason()
}

func (b *Board) exitReason() string {
	c := b.Counts
	var why []string
	add := func(n int, what string) {
		if n > 0 {
			why = append(why, fmt.Sprintf("%d %s", n, what))
		}
	}
	switch b.ExitCode {
	case outcome.ExitRegression:
		if b.Gating {
			add(c[string(outcome.Red)], "RED")
			add(c[string(outcome.Inconclusive)], "INCONCLUSIVE")
		}
		if b.Strict {
			add(c[string(outcome.Fixed)], "FIXED under --strict")
			add(c[string(outcome.Flaky)], "FLAKY under --strict")
		}
		return "regression: " + strings.Join(why, ", ")
	case outcome.ExitSetup:
		add(c[string(outcome.SetupFail)], "SETUP-FAIL")
		for _, p := range b.Problems {
			why = append(why, p.Message)
		}
		return "setup failure, nothing regressed but not everything was verified: " + strings.Join(why, "; ")
	}
	if !b.Gating {
		add(c[string(outcome.Red)], "RED")
		add(c[string(outcome.Inconclusive)], "INCONCLUSIVE")
		if len(why) > 0 {
			return "ok: a non-gating board reports " + strings.Join(why, ", ") + " without failing (redness is the data)"
		}
	}
	var but []string
	if n := c[string(outcome.Fixed)]; n > 0 {
		but = append(but, fmt.Sprintf("%d known-red section(s) now pass: FIXED, promote them", n))
	}
	if n := c[string(outcome.Flaky)]; n > 0 {
		but = append(but, fmt.Sprintf("%d section(s) FLAKY: failed, then passed on a re-run; see every attempt", n))
	}
	if len(but) > 0 {
		return "ok, but " + strings.Join(but, "; ")
	}
	return "ok: nothing regressed"
}
