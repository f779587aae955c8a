package board

import (
	"fmt"
	"strings"

	"github.com/reproboard/reproboard/harness/outcome"
)

// CombineExit is the exit code of several boards run together: a
// regression (1) beats a setup failure (2), which beats green (0). A CI
// job that runs a gating and a non-gating board fails as a regression if
// any board regressed.
func CombineExit(codes []int) int {
	worst := outcome.ExitGreen
	for _, c := range codes {
		switch {
		case c == outcome.ExitRegression:
			return outcome.ExitRegression
		case c != outcome.ExitGreen:
			worst = outcome.ExitSetup
		}
	}
	return worst
}

// Overall is the verdict of several boards run together, as the combined
// reports head it: CombineExit of their exit codes, and why, naming the
// boards that decide it.
func Overall(boards []*Board) (code int, reason string) {
	var codes []int
	var regressed, unverified, fixed []string
	for _, b := range boards {
		codes = append(codes, b.ExitCode)
		switch {
		case b.ExitCode == outcome.ExitRegression:
			regressed = append(regressed, b.Name)
		case b.ExitCode != outcome.ExitGreen:
			unverified = append(unverified, b.Name)
		case b.Counts[string(outcome.Fixed)] > 0:
			fixed = append(fixed, b.Name)
		}
	}
	code = CombineExit(codes)
	switch code {
	case outcome.ExitRegression:
		reason = "regression on " + boardList(regressed)
		if len(unverified) > 0 {
			reason += "; setup failure on " + boardList(unverified)
		}
	case outcome.ExitSetup:
		reason = "setup failure on " + boardList(unverified) + ": nothing regressed, but not everything was verified"
	default:
		reason = "ok: nothing regressed on any board"
		if len(fixed) > 0 {
			reason += "; known-red sections now pass on " + boardList(fixed) + ": FIXED, promote them"
		}
	}
	return code, reason
}

// ExitMeaning says what an exit code of the guard contract means.
func ExitMeaning(code int) string {
	switch code {
	case outcome.ExitGreen:
		return "green"
	case outcome.ExitRegression:
		return "regression"
	case outcome.ExitSetup:
		return "setup failure"
	}
	return fmt.Sprintf("unknown exit code %d", code)
}

func boardList(names []string) string {
	if len(names) == 1 {
		return "board " + names[0]
	}
	return "boards " + strings.Join(names, ", ")
}
