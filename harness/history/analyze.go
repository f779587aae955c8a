package history

import (
	"fmt"
	"sort"
	"time"

	"github.com/reproboard/reproboard/harness/outcome"
)

// Flaky is the outcome of a section that failed and then passed on a
// re-run.
const Flaky = outcome.Flaky

// Failing reports whether o is a failure a maintainer tracks: RED or
// KNOWN-RED.
func Failing(o outcome.Outcome) bool { return o == outcome.Red || o == outcome.KnownRed }

// Passing reports whether o is a pass: GREEN, FIXED, or FLAKY (it passed
// in the end).
func Passing(o outcome.Outcome) bool { return o == outcome.Green || o == outcome.Fixed || o == Flaky }

// Options shape an analysis.
type Options struct {
	CloseAfter int     // a known-red passing in this many runs in a row is suggested for closing; 5 when 0
	FlakyAbove float64 // a section unstable in more than this share of its runs is suggested; 0.2 when 0
	// Window is how many runs were asked for: a red streak that reaches
	// back to the first run of a full window may be older (AtLeast).
	Window int
}

// Ref is a run as the reports point at it.
type Ref struct {
	ID        int64     `json:"id"`
	Time      time.Time `json:"time"`
	Commit    string    `json:"commit,omitempty"`
	Branch    string    `json:"branch,omitempty"`
	CommitURL string    `json:"commit_url,omitempty"`
	ExitCode  int       `json:"exit_code"`
}

// Label is "run 12 (abc1234)", or "run 12" without a commit.
func (r *Ref) Label() string {
	if r == nil {
		return ""
	}
	if r.Commit == "" {
		return fmt.Sprintf("run %d", r.ID)
	}
	return fmt.Sprintf("run %d (%s)", r.ID, Short(r.Commit))
}

// Analysis is what the history says about the current run of one board.
type Analysis struct {
	Board string `json:"board"`
	// Unavailable says why there is no history (the file is corrupt, a
	// write failed); every other field is then empty.
	Unavailable string `json:"unavailable,omitempty"`
	Runs        []*Ref `json:"runs"`               // the window, oldest first; the last is the current run
	Previous    *Ref   `json:"previous,omitempty"` // the run before the current; nil on the first
	// What changed since Previous, per section of the current run.
	New      []Change `json:"new_red"`   // failing now, not failing before
	Fixed    []Change `json:"fixed"`     // passing now, failing before
	StillRed []Change `json:"still_red"` // failing now and before; Since is where it started
	Changed  []Change `json:"changed"`   // any other change of outcome
	// Sections by Key(package, test), for every section of the current run.
	Sections    map[string]*SectionHistory `json:"sections"`
	Suggestions []string                   `json:"suggestions"`
}

// Change is one section's change between the previous run and this one.
type Change struct {
	Package string          `json:"package"`
	Test    string          `json:"test"`
	Issue   int             `json:"issue,omitempty"`
	Outcome outcome.Outcome `json:"outcome"`
	Before  outcome.Outcome `json:"before,omitempty"` // "" when the section is new
	// Since: for a still-red section the first run of its failing streak
	// (AtLeast when the streak reaches past the window); for a fixed one
	// the last run it failed in.
	Since   *Ref `json:"since,omitempty"`
	AtLeast bool `json:"at_least,omitempty"`
}

// SectionHistory is one section across the window.
type SectionHistory struct {
	Cells     []Cell  `json:"cells"` // one per run of the window, oldest first; Outcome "" where the section did not run
	Present   int     `json:"runs"`
	Flips     int     `json:"flips"`      // consecutive runs whose outcome went from pass to fail or back
	FlakyRuns int     `json:"flaky_runs"` // runs whose outcome was FLAKY
	FlakeRate float64 `json:"flake_rate"` // (Flips + FlakyRuns) / Present
	FirstFail *Ref    `json:"first_fail,omitempty"`
	// PassStreak is how many runs in a row, up to the current one, passed;
	// PassSince the first of them.
	PassStreak int     `json:"pass_streak"`
	PassSince  *Ref    `json:"pass_since,omitempty"`
	Trends     []Trend `json:"trends,omitempty"` // one per leak metric measured in the window
}

// Unstable reports whether the section flipped both ways (from pass to
// fail and back, or back again) or was FLAKY. One flip is a change, a
// fix or a regression, not flakiness.
func (h *SectionHistory) Unstable() bool { return h.Flips >= 2 || h.FlakyRuns > 0 }

// Cell is one run's outcome of a section.
type Cell struct {
	Run      *Ref            `json:"run"`
	Outcome  outcome.Outcome `json:"outcome,omitempty"`
	Duration float64         `json:"duration_s"`
	Attempts int             `json:"attempts,omitempty"`
}

// Trend is one leak metric's slope per run.
type Trend struct {
	Metric string       `json:"metric"`
	Unit   string       `json:"unit,omitempty"`
	Budget string       `json:"budget,omitempty"` // the current run's
	Points []TrendPoint `json:"points"`
}

// TrendPoint is one run's measure of a metric.
type TrendPoint struct {
	Run         *Ref            `json:"run"`
	Slope       *float64        `json:"slope"`
	Sensitivity *float64        `json:"sensitivity,omitempty"`
	Verdict     outcome.Outcome `json:"verdict"`
}

// Key identifies a section across runs.
func Key(pkg, test string) string { return pkg + "\x00" + test }

// Analyze reads runs, one board's window oldest first, its current run
// last.
func Analyze(runs []*Run, opts Options) *Analysis {
	if opts.CloseAfter <= 0 {
		opts.CloseAfter = 5
	}
	if opts.FlakyAbove <= 0 {
		opts.FlakyAbove = 0.2
	}
	a := &Analysis{Sections: map[string]*SectionHistory{}, New: []Change{}, Fixed: []Change{}, StillRed: []Change{}, Changed: []Change{}, Suggestions: []string{}}
	if len(runs) == 0 {
		return a
	}
	cur := runs[len(runs)-1]
	a.Board = cur.Board
	refs := make([]*Ref, len(runs))
	for i, r := range runs {
		refs[i] = &Ref{ID: r.ID, Time: r.Time, Commit: r.Commit, Branch: r.Branch, CommitURL: r.CommitURL, ExitCode: r.ExitCode}
	}
	a.Runs = refs
	if len(runs) > 1 {
		a.Previous = refs[len(refs)-2]
	}
	// Index every run's sections once.
	index := make([]map[string]*Section, len(runs))
	for i, r := range runs {
		index[i] = make(map[string]*Section, len(r.Sections))
		for j := range r.Sections {
			s := &r.Sections[j]
			index[i][Key(s.Package, s.Test)] = s
		}
	}
	last := len(runs) - 1
	for _, s := range cur.Sections {
		k := Key(s.Package, s.Test)
		h := sectionHistory(k, refs, index)
		a.Sections[k] = h
		if a.Previous == nil {
			continue
		}
		c := Change{Package: s.Package, Test: s.Test, Issue: s.Issue, Outcome: s.Outcome}
		if p := index[last-1][k]; p != nil {
			c.Before = p.Outcome
		}
		switch {
		case Failing(s.Outcome) && Failing(c.Before):
			i := last
			for i > 0 && h.Cells[i-1].Outcome != "" && Failing(h.Cells[i-1].Outcome) {
				i--
			}
			c.Since, c.AtLeast = refs[i], i == 0 && opts.Window > 0 && len(runs) >= opts.Window
			a.StillRed = append(a.StillRed, c)
		case Failing(s.Outcome):
			a.New = append(a.New, c)
		case Passing(s.Outcome) && Failing(c.Before):
			c.Since = refs[last-1]
			a.Fixed = append(a.Fixed, c)
		case c.Before != "" && c.Before != s.Outcome:
			a.Changed = append(a.Changed, c)
		}
	}
	a.Suggestions = suggest(cur, a, opts)
	return a
}

func sectionHistory(k string, refs []*Ref, index []map[string]*Section) *SectionHistory {
	h := &SectionHistory{Cells: make([]Cell, len(refs))}
	trends := map[string]*Trend{}
	var order []string
	var prev outcome.Outcome // the last passing or failing outcome seen
	for i, ref := range refs {
		h.Cells[i].Run = ref
		s := index[i][k]
		if s == nil {
			continue
		}
		h.Cells[i].Outcome, h.Cells[i].Duration, h.Cells[i].Attempts = s.Outcome, s.Duration, s.Attempts
		h.Present++
		if s.Outcome == Flaky {
			h.FlakyRuns++
		}
		if Failing(s.Outcome) && h.FirstFail == nil {
			h.FirstFail = ref
		}
		if Failing(s.Outcome) || Passing(s.Outcome) {
			if prev != "" && Failing(prev) != Failing(s.Outcome) {
				h.Flips++
			}
			prev = s.Outcome
		}
		for _, m := range s.Measures {
			t := trends[m.Metric]
			if t == nil {
				t = &Trend{Metric: m.Metric}
				trends[m.Metric] = t
				order = append(order, m.Metric)
			}
			t.Unit, t.Budget = m.Unit, m.Budget
			t.Points = append(t.Points, TrendPoint{Run: ref, Slope: m.Slope, Sensitivity: m.Sensitivity, Verdict: m.Verdict})
		}
	}
	if h.Present > 0 {
		h.FlakeRate = float64(h.Flips+h.FlakyRuns) / float64(h.Present)
	}
	for i := len(h.Cells) - 1; i >= 0 && Passing(h.Cells[i].Outcome); i-- {
		h.PassStreak++
		h.PassSince = h.Cells[i].Run
	}
	for _, m := range order {
		h.Trends = append(h.Trends, *trends[m])
	}
	return h
}

func suggest(cur *Run, a *Analysis, opts Options) []string {
	out := []string{}
	type flaky struct {
		test string
		h    *SectionHistory
	}
	var flakies []flaky
	for _, s := range cur.Sections {
		h := a.Sections[Key(s.Package, s.Test)]
		if s.Issue > 0 && h.PassStreak >= opts.CloseAfter {
			out = append(out, fmt.Sprintf("close #%d: %s %s in %d runs since %s", s.Issue, s.Test, s.Outcome, h.PassStreak, sinceWord(h.PassSince)))
		}
		if h.Unstable() && h.FlakeRate > opts.FlakyAbove {
			flakies = append(flakies, flaky{s.Test, h})
		}
	}
	sort.SliceStable(flakies, func(i, j int) bool { return flakies[i].h.FlakeRate > flakies[j].h.FlakeRate })
	for _, f := range flakies {
		out = append(out, fmt.Sprintf("%s is flaky: unstable in %.0f%% of its last %d runs (%d flips, %d FLAKY), above %.0f%%; fix it or quarantine it",
			f.test, 100*f.h.FlakeRate, f.h.Present, f.h.Flips, f.h.FlakyRuns, 100*opts.FlakyAbove))
	}
	return out
}

// sinceWord is a run as a suggestion names it: its short commit, or
// "run N" when it has none.
func sinceWord(r *Ref) string {
	if r == nil {
		return "?"
	}
	if r.Commit != "" {
		return Short(r.Commit)
	}
	return fmt.Sprintf("run %d", r.ID)
}

// Since is a run as "what changed" names it: "abc1234 (run 3, 2026-12-01 13:04)".
func Since(r *Ref) string {
	if r == nil {
		return ""
	}
	at := r.Time.UTC().Format("2006-01-02 15:04")
	if r.Commit == "" {
		return fmt.Sprintf("run %d, %s", r.ID, at)
	}
	return fmt.Sprintf("%s (run %d, %s)", Short(r.Commit), r.ID, at)
}

// Unstable is one section of a window that flipped or was FLAKY.
type Unstable struct {
	Board   string `json:"board"`
	Package string `json:"package"`
	Test    string `json:"test"`
	*SectionHistory
}

// FindUnstable lists every section that ran in runs (one board's window,
// oldest first), in any of them, and is Unstable: the most unstable first.
func FindUnstable(runs []*Run) []Unstable {
	if len(runs) == 0 {
		return nil
	}
	refs := make([]*Ref, len(runs))
	index := make([]map[string]*Section, len(runs))
	var keys []Unstable
	seen := map[string]bool{}
	for i, r := range runs {
		refs[i] = &Ref{ID: r.ID, Time: r.Time, Commit: r.Commit, Branch: r.Branch, CommitURL: r.CommitURL, ExitCode: r.ExitCode}
		index[i] = make(map[string]*Section, len(r.Sections))
		for j := range r.Sections {
			s := &r.Sections[j]
			k := Key(s.Package, s.Test)
			index[i][k] = s
			if !seen[k] {
				seen[k] = true
				keys = append(keys, Unstable{Board: r.Board, Package: s.Package, Test: s.Test})
			}
		}
	}
	var out []Unstable
	for _, u := range keys {
		u.SectionHistory = sectionHistory(Key(u.Package, u.Test), refs, index)
		if u.Unstable() {
			u.Trends = nil // flakiness is about outcomes
			out = append(out, u)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].FlakeRate > out[j].FlakeRate })
	return out
}
