package board

import (
	"fmt"

	"github.com/reproboard/reproboard/harness/excerpt"
	"github.com/reproboard/reproboard/harness/outcome"
)

// NeedsRerun reports whether --rerun-fails re-runs the section: RED and
// INCONCLUSIVE only. A KNOWN-RED failed the known way, and a FIXED one
// passed: neither is a coin toss to settle.
func NeedsRerun(s Section) bool {
	return s.Outcome == outcome.Red || s.Outcome == outcome.Inconclusive
}

// Rerun folds the re-runs of a failed section into it. first is the
// section as the board's run classified it; reruns are its classifications
// when run again alone, in order, the last being the first that did not
// fail (or the last allowed). A re-run that passes (GREEN, or FIXED for a
// known-red entry) makes the section FLAKY; one that fails the known way
// makes it KNOWN-RED (a known red that sometimes fails with another
// signature first is still the known bug); otherwise it keeps its first
// outcome. Every attempt is kept, first included.
func Rerun(first Section, reruns []Section) Section {
	if len(reruns) == 0 {
		return first
	}
	s := first
	s.Attempts = []Attempt{attempt(first)}
	for _, r := range reruns {
		s.Attempts = append(s.Attempts, attempt(r))
	}
	last := reruns[len(reruns)-1]
	switch last.Outcome {
	case outcome.Green, outcome.Fixed:
		s.Outcome = outcome.Flaky
		s.Reason = excerpt.OneLine(fmt.Sprintf("failed, then passed on re-run %d of %d; first: %s", len(reruns), len(reruns), first.Reason), 300)
	case outcome.KnownRed:
		attempts := s.Attempts
		s = last
		s.Attempts = attempts
	default:
		s.Reason = excerpt.OneLine(fmt.Sprintf("failed all %d attempts; first: %s", len(s.Attempts), first.Reason), 300)
	}
	return s
}

func attempt(s Section) Attempt {
	return Attempt{Outcome: s.Outcome, Reason: s.Reason, Duration: s.Duration}
}
