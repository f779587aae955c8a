package report

import (
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/excerpt"
	"github.com/reproboard/reproboard/harness/outcome"
)

// TerminalOptions shape the terminal report.
type TerminalOptions struct {
	Color bool // ANSI colours; only when stdout is a terminal
}

var ansi = map[outcome.Outcome]string{
	outcome.Green:        "\x1b[32m",
	outcome.Red:          "\x1b[31m",
	outcome.KnownRed:     "\x1b[33m",
	outcome.Fixed:        "\x1b[36m",
	outcome.SetupFail:    "\x1b[35m",
	outcome.Inconclusive: "\x1b[35m",
}

const ansiReset = "\x1b[0m"

// WriteTerminal writes the board for a person at a terminal or reading a
// CI log: one row per section, then the excerpt of every section that is
// not GREEN, the problems, and a summary line with the exit code.
func WriteTerminal(w io.Writer, b *board.Board, opts TerminalOptions) error {
	ew := &errWriter{w: w}
	paint := func(o outcome.Outcome, s string) string {
		if !opts.Color {
			return s
		}
		return ansi[o] + s + ansiReset
	}
	fmt.Fprintf(ew, "board %s (%s, target %s, %s)%s\n", b.Name, gatingWord(b.Gating), b.Target, b.Platform, shardNote(b.Shard))
	multiPkg := packageCount(b) > 1
	tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OUTCOME\tISSUE\tDURATION\tSECTION\tREASON")
	for _, s := range b.Sections {
		issue := ""
		if s.Issue > 0 {
			issue = fmt.Sprintf("#%d", s.Issue)
		}
		// Pad before colouring: escape codes would confuse the column widths.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", paint(s.Outcome, fmt.Sprintf("%-12s", s.Outcome)), issue,
			formatSeconds(s.Duration), sectionLabel(s, multiPkg), excerpt.OneLine(s.Reason, 100))
	}
	_ = tw.Flush()
	for _, s := range b.Sections {
		if s.Outcome == outcome.Green {
			continue
		}
		fmt.Fprintf(ew, "\n--- %s %s: %s\n", paint(s.Outcome, string(s.Outcome)), sectionLabel(s, multiPkg), s.Reason)
		for _, m := range measureLines(s.Measure) {
			fmt.Fprintf(ew, "measure: %s\n", m)
		}
		for _, kind := range sortedKeys(s.Artifacts) {
			fmt.Fprintf(ew, "artifact %s: %s\n", kind, s.Artifacts[kind])
		}
		if s.Excerpt != "" {
			fmt.Fprintf(ew, "%s\n", strings.TrimRight(s.Excerpt, "\n"))
		}
	}
	for _, p := range b.Problems {
		fmt.Fprintf(ew, "\n--- PROBLEM %s: %s\n", p.Kind, p.Message)
		if p.Excerpt != "" {
			fmt.Fprintf(ew, "%s\n", strings.TrimRight(p.Excerpt, "\n"))
		}
	}
	if len(b.Skipped) > 0 {
		fmt.Fprintf(ew, "\n%d section(s) skipped, not counted:\n", len(b.Skipped))
		for _, s := range b.Skipped {
			fmt.Fprintf(ew, "  %s: %s\n", s.Test, excerpt.OneLine(s.Reason, 120))
		}
	}
	fmt.Fprintf(ew, "\n%s: %s — exit %d: %s\n", b.Name, CountsLine(b.Counts), b.ExitCode, b.ExitReason)
	return ew.err
}

func measureLines(m string) []string {
	if m == "" {
		return nil
	}
	return strings.Split(m, "\n")
}

// CountsLine summarises counts: "12 sections: 10 GREEN, 2 KNOWN-RED".
func CountsLine(c board.Counts) string {
	var parts []string
	for _, o := range outcome.All {
		if n := c[string(o)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, o))
		}
	}
	s := fmt.Sprintf("%d section(s)", c["total"])
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s
}

func gatingWord(g bool) string {
	if g {
		return "gating"
	}
	return "non-gating"
}

func shardNote(shard string) string {
	if shard == "" {
		return ""
	}
	return " shard " + shard
}

func formatSeconds(s float64) string {
	if s >= 100 {
		return fmt.Sprintf("%.0fs", s)
	}
	return fmt.Sprintf("%.1fs", s)
}

func packageCount(b *board.Board) int {
	seen := map[string]bool{}
	for _, s := range b.Sections {
		seen[s.Package] = true
	}
	return len(seen)
}

// sectionLabel names a section by its test; the package is added when the
// board has several, since a test name is only unique within its package.
func sectionLabel(s board.Section, withPackage bool) string {
	if withPackage {
		return s.Test + " (" + path.Base(s.Package) + ")"
	}
	return s.Test
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// errWriter keeps the first write error so a report checks it once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, nil
}
