package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/reproboard/reproboard/harness/history"
)

// WriteTerminalChanges writes what the history says before a board's
// terminal report: what changed since the board's last run, then the
// suggestions. A nil analysis (history turned off) writes nothing.
func WriteTerminalChanges(w io.Writer, a *history.Analysis, opts TerminalOptions) error {
	if a == nil {
		return nil
	}
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "%s\n", historyHeadline(a))
	if lines := changes(a); len(lines) > 0 {
		tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
		for _, l := range lines {
			issue := ""
			if l.Issue > 0 {
				issue = fmt.Sprintf("#%d", l.Issue)
			}
			out := fmt.Sprintf("%-12s", l.Outcome)
			if opts.Color && l.Outcome != "" {
				out = ansi[l.Outcome] + out + ansiReset
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", l.Kind, out, issue, l.Test, l.Detail)
		}
		_ = tw.Flush()
	}
	for _, s := range a.Suggestions {
		fmt.Fprintf(ew, "  suggestion: %s\n", s)
	}
	fmt.Fprintln(ew)
	return ew.err
}
