package history

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/meter"
	"github.com/reproboard/reproboard/harness/outcome"
)

// Run is the record of one run of one board.
type Run struct {
	ID         int64     `json:"id,omitempty"` // set by the store
	Board      string    `json:"board"`
	Time       time.Time `json:"time"`
	Duration   float64   `json:"duration_s"`
	Commit     string    `json:"commit,omitempty"`
	Branch     string    `json:"branch,omitempty"`
	CommitURL  string    `json:"commit_url,omitempty"`
	GoVersion  string    `json:"go_version,omitempty"`
	Platform   string    `json:"platform,omitempty"`
	Target     string    `json:"target,omitempty"`
	TargetHash string    `json:"target_hash,omitempty"`
	ExitCode   int       `json:"exit_code"`
	Sections   []Section `json:"sections"`
}

// Section is one section's outcome in one run.
type Section struct {
	Package  string          `json:"package"`
	Test     string          `json:"test"`
	Outcome  outcome.Outcome `json:"outcome"`
	Reason   string          `json:"reason,omitempty"`
	Issue    int             `json:"issue,omitempty"`
	Duration float64         `json:"duration_s"`
	Attempts int             `json:"attempts"`
	Measures []Measure       `json:"measures,omitempty"`
}

// Measure is one leak measure of a section: what the LEAK_MEASURE line
// carried, without its samples (the run's own report keeps those).
type Measure struct {
	Metric string   `json:"metric"`
	Unit   string   `json:"unit,omitempty"`
	Slope  *float64 `json:"slope"` // units per op; nil when the measure has none (NaN)
	Budget string   `json:"budget,omitempty"`
	// Sensitivity is the smallest slope the measurement could tell from
	// noise, when the line carries one.
	Sensitivity *float64        `json:"sensitivity,omitempty"`
	Verdict     outcome.Outcome `json:"verdict"`
}

// FromBoard is the record of a classified board. The run facts (time,
// commit, versions) come from b.RunInfo; a board without them is recorded
// with the time now.
func FromBoard(b *board.Board) *Run {
	r := &Run{Board: b.Name, Target: b.Target, Platform: b.Platform, ExitCode: b.ExitCode, Sections: make([]Section, 0, len(b.Sections))}
	if info := b.RunInfo; info != nil {
		r.Time, r.Duration = info.Time, info.Duration
		r.Commit, r.Branch, r.CommitURL = info.Commit, info.Branch, info.CommitURL
		r.GoVersion, r.TargetHash = info.GoVersion, info.TargetHash
	}
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	for _, s := range b.Sections {
		r.Sections = append(r.Sections, Section{
			Package: s.Package, Test: s.Test, Outcome: s.Outcome, Reason: s.Reason, Issue: s.Issue,
			Duration: s.Duration, Attempts: attempts(s), Measures: ParseMeasures(s.Measure),
		})
	}
	return r
}

// attempts counts a section's runs: its attempts when it was re-run
// (--rerun-fails), else 1.
func attempts(s board.Section) int { return max(1, len(s.Attempts)) }

// ParseMeasures reads the LEAK_MEASURE lines of a section's measure text,
// one Measure per line that parses; other lines are left out.
func ParseMeasures(text string) []Measure {
	var out []Measure
	for _, line := range strings.Split(text, "\n") {
		if !strings.Contains(line, meter.LeakMeasure) {
			continue
		}
		m, err := meter.ParseMeasure(line)
		if err != nil {
			continue
		}
		hm := Measure{Metric: string(m.Metric), Unit: string(m.Unit), Budget: m.Budget.String(), Verdict: m.Verdict}
		if !math.IsNaN(m.Slope) && !math.IsInf(m.Slope, 0) {
			slope := m.Slope
			hm.Slope = &slope
		}
		if v, ok := lineValue(line, "sensitivity"); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) {
				hm.Sensitivity = &f
			}
		}
		out = append(out, hm)
	}
	return out
}

// lineValue finds key=value in a measure line; values are bare or Go
// quoted strings (meter.FormatMeasure).
func lineValue(line, key string) (string, bool) {
	i := strings.Index(line, " "+key+"=")
	if i < 0 {
		return "", false
	}
	rest := line[i+len(key)+2:]
	if strings.HasPrefix(rest, `"`) {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return "", false
		}
		v, _ := strconv.Unquote(q)
		return v, true
	}
	v, _, _ := strings.Cut(rest, " ")
	return v, true
}

// Short is the commit as reports print it: 7 hex digits.
func Short(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}
	return commit
}
