package report

import (
	"fmt"

	"github.com/reproboard/reproboard/harness/history"
	"github.com/reproboard/reproboard/harness/outcome"
)

// maxChanges bounds each kind of change a report lists; the rest is a
// count (a package that stopped building turns every section RED).
const maxChanges = 50

// changeLine is one line of "what changed", as every format words it.
type changeLine struct {
	Kind    string // "new RED", "fixed", "still red", "changed"
	Test    string
	Issue   int
	Outcome outcome.Outcome
	Detail  string // "was GREEN", "since abc1234 (run 3, ...)"
	Since   *history.Ref
}

// changes lists a's changes, the worst first: new REDs, fixed, still
// red, then other changes of outcome; each kind cut to maxChanges, with
// a line saying how many more.
func changes(a *history.Analysis) []changeLine {
	var out []changeLine
	add := func(kind string, cs []history.Change, detail func(history.Change) (string, *history.Ref)) {
		for i, c := range cs {
			if i == maxChanges {
				out = append(out, changeLine{Kind: kind, Detail: fmt.Sprintf("and %d more", len(cs)-maxChanges)})
				break
			}
			d, since := detail(c)
			out = append(out, changeLine{Kind: kind, Test: c.Test, Issue: c.Issue, Outcome: c.Outcome, Detail: d, Since: since})
		}
	}
	add("new RED", a.New, func(c history.Change) (string, *history.Ref) {
		if c.Before == "" {
			return "a new section", nil
		}
		return "was " + string(c.Before), nil
	})
	add("fixed", a.Fixed, func(c history.Change) (string, *history.Ref) {
		return fmt.Sprintf("was %s; fixed since %s", c.Before, history.Since(c.Since)), c.Since
	})
	add("still red", a.StillRed, func(c history.Change) (string, *history.Ref) {
		at := "since"
		if c.AtLeast {
			at = "since at least"
		}
		return fmt.Sprintf("%s %s", at, history.Since(c.Since)), c.Since
	})
	add("changed", a.Changed, func(c history.Change) (string, *history.Ref) {
		return fmt.Sprintf("was %s", c.Before), nil
	})
	return out
}

// historyHeadline is the line above the changes: against which run, or
// why there is nothing to compare.
func historyHeadline(a *history.Analysis) string {
	switch {
	case a.Unavailable != "":
		return "history unavailable: " + a.Unavailable
	case a.Previous == nil:
		return fmt.Sprintf("history: the first recorded run of board %s; nothing to compare yet", a.Board)
	}
	if len(a.New)+len(a.Fixed)+len(a.Changed) == 0 {
		return "nothing changed since " + history.Since(a.Previous) // still red ones follow
	}
	return "what changed since " + history.Since(a.Previous)
}
