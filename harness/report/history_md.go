package report

import (
	"fmt"
	"strings"

	"github.com/reproboard/reproboard/harness/history"
)

// markdownChanges is a board's "what changed" block: a line against which
// run, a table of the changes, the suggestions.
func markdownChanges(a *history.Analysis) string {
	if a == nil {
		return ""
	}
	var b strings.Builder
	head := historyHeadline(a)
	if a.Unavailable != "" {
		fmt.Fprintf(&b, "⚠️ %s\n\n", mdText(head))
		return b.String()
	}
	fmt.Fprintf(&b, "**%s**\n\n", mdText(head))
	if lines := changes(a); len(lines) > 0 {
		b.WriteString("| change | outcome | issue | section | |\n|---|---|---|---|---|\n")
		for _, l := range lines {
			out := ""
			if l.Outcome != "" {
				out = mdOutcome(l.Outcome)
			}
			test := ""
			if l.Test != "" {
				test = "`" + mdCode(l.Test) + "`"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", changeIcon(l.Kind), out, mdIssue(l.Issue), test, mdText(l.Detail))
		}
		b.WriteString("\n")
	}
	for _, s := range a.Suggestions {
		fmt.Fprintf(&b, "- 💡 %s\n", mdText(s))
	}
	if len(a.Suggestions) > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

func changeIcon(kind string) string {
	switch kind {
	case "new RED":
		return "🆕 new RED"
	case "fixed":
		return "✅ fixed"
	case "still red":
		return "🔁 still red"
	}
	return kind
}
