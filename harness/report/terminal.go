package report

import (
	"fmt"
	"io"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/excerpt"
	"github.com/reproboard/reproboard/harness/outcome"
)

// TerminalOptions shape the terminal report.
type TerminalOptions struct {
	Color bool // ANSI colours; only when stdout is a terminal
	// Width is the terminal's width in columns; 0 means unknown: 80.
	Width int
}

// DefaultWidth is the width of a terminal that does not say (a CI log).
const DefaultWidth = 80

var ansi = map[outcome.Outcome]string{
	outcome.Green:        "\x1b[32m",
	outcome.Red:          "\x1b[31m",
	outcome.KnownRed:     "\x1b[33m",
	outcome.Fixed:        "\x1b[36m",
	outcome.SetupFail:    "\x1b[35m",
	outcome.Inconclusive: "\x1b[35m",
	outcome.Flaky:        "\x1b[33m",
}

const ansiReset = "\x1b[0m"

// lookFirst is the table's order: what needs a look first, GREEN last.
// Outcomes not named here (added later) sit after these and before GREEN.
var lookFirst = []outcome.Outcome{outcome.Red, outcome.Inconclusive, outcome.SetupFail, outcome.Flaky, outcome.Fixed, outcome.KnownRed}

func lookRank(o outcome.Outcome) int {
	if o == outcome.Green {
		return len(lookFirst) + 1
	}
	if i := slices.Index(lookFirst, o); i >= 0 {
		return i
	}
	return len(lookFirst)
}

// WriteTerminal writes the board for a person at a terminal or reading a
// CI log: one row per section, what needs a look first, every line within
// the width; then the excerpt of every section that is not GREEN, the
// problems, and a summary line with the exit code.
func WriteTerminal(w io.Writer, b *board.Board, opts TerminalOptions) error {
	ew := &errWriter{w: w}
	paint := func(o outcome.Outcome, s string) string {
		if !opts.Color || ansi[o] == "" {
			return s
		}
		return ansi[o] + s + ansiReset
	}
	width := opts.Width
	if width <= 0 {
		width = DefaultWidth
	}
	fmt.Fprintf(ew, "%s\n", fitEnd(fmt.Sprintf("board %s (%s, target %s, %s)%s", b.Name, gatingWord(b.Gating), b.Target, b.Platform, shardNote(b.Shard)), width))
	if len(b.Partial) > 0 {
		fmt.Fprintln(ew, PartialLine(b))
	}
	multiPkg := packageCount(b) > 1
	rows := slices.Clone(b.Sections)
	slices.SortStableFunc(rows, func(x, y board.Section) int { return lookRank(x.Outcome) - lookRank(y.Outcome) })
	tbl := table{header: []string{"OUTCOME", "ISSUE", "TIME", "SECTION", "REASON"}}
	for _, s := range rows {
		issue := ""
		if s.Issue > 0 {
			issue = fmt.Sprintf("#%d", s.Issue)
		}
		tbl.rows = append(tbl.rows, []string{string(s.Outcome), issue, formatSeconds(s.Duration), sectionLabel(s, multiPkg), CauseLine(s.Reason)})
	}
	tbl.write(ew, width, func(row int, cell string) string {
		if row < 0 {
			return cell
		}
		return paint(rows[row].Outcome, cell)
	})
	for _, s := range rows {
		if s.Outcome == outcome.Green {
			continue
		}
		first, more, _ := strings.Cut(strings.TrimRight(s.Reason, "\n"), "\n")
		head := wrap(fmt.Sprintf("--- %s %s: %s", s.Outcome, sectionLabel(s, multiPkg), first), width, "    ")
		head[0] = strings.Replace(head[0], string(s.Outcome), paint(s.Outcome, string(s.Outcome)), 1)
		for _, l := range strings.Split(more, "\n") {
			if strings.TrimSpace(l) != "" {
				head = append(head, wrap("    "+strings.TrimSpace(l), width, "      ")...)
			}
		}
		fmt.Fprintf(ew, "\n%s\n", strings.Join(head, "\n"))
		for i, a := range s.Attempts {
			fmt.Fprintf(ew, "%s\n", fitEnd(fmt.Sprintf("attempt %d: %s", i+1, AttemptLine(a)), width))
		}
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
			fmt.Fprintf(ew, "%s\n", fitEnd(fmt.Sprintf("  %s: %s", FitMiddle(s.Test, width/2), excerpt.OneLine(s.Reason, width)), width))
		}
	}
	fmt.Fprintf(ew, "\n%s\n", strings.Join(wrap(fmt.Sprintf("%s: %s — exit %d: %s", b.Name, CountsLine(b.Counts), b.ExitCode, b.ExitReason), width, "  "), "\n"))
	return ew.err
}

// errorLine is what a line that says what went wrong looks like.
var errorLine = regexp.MustCompile(`(?i)(error|fail|panic|fatal|refused|denied|in use|cannot|can't|unable|not found|no such|not installed|timed out|timeout|unexpected|invalid|exceed|\bRED\b|> budget|mismatch|missing|not running|killed|signal)`)

// CauseLine is a failure reason in one line: the last line of it that
// looks like an error (a failure prints its preamble first, its cause
// last: "bind: address already in use" after "target failed: …; output
// tail:"), or its first line when none does.
func CauseLine(reason string) string {
	lines := strings.Split(strings.TrimSpace(reason), "\n")
	if len(lines) <= 1 {
		return strings.TrimSpace(reason)
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && errorLine.MatchString(l) && !strings.HasSuffix(l, "output tail:") {
			return l
		}
	}
	return strings.TrimSpace(lines[0])
}

// table lays out columns within a width: every column as wide as its
// widest cell, except the last two (SECTION and REASON), which share what
// is left: names are shortened in the middle, reasons at the end.
type table struct {
	header []string
	rows   [][]string
}

func (t table) write(w io.Writer, width int, paint func(row int, cell string) string) {
	t = t.dropEmpty()
	n := len(t.header)
	widths := make([]int, n)
	for i, h := range t.header {
		widths[i] = runeLen(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			widths[i] = max(widths[i], runeLen(c))
		}
	}
	const gap = 2
	fixed := 0
	for _, wd := range widths[:n-2] {
		fixed += wd + gap
	}
	rest := width - fixed // for SECTION, the gap and REASON
	sec, reason := widths[n-2], widths[n-1]
	noReason := true
	for _, r := range t.rows {
		noReason = noReason && r[n-1] == ""
	}
	switch {
	case noReason: // every row GREEN: the names get the whole rest
		sec, reason = max(runeLen(t.header[n-2]), min(sec, rest)), 0
		t.header = t.header[:n-1]
	case sec+gap+reason > rest:
		// The reason keeps up to 24 columns (a cause line shortened in the
		// middle still says what and why), the name takes the rest.
		sec = max(runeLen(t.header[n-2]), min(sec, rest-gap-min(reason, 24)))
		reason = max(0, rest-sec-gap)
	}
	widths[n-2], widths[n-1] = sec, reason
	line := func(row int, cells []string) {
		var b strings.Builder
		if noReason {
			cells = cells[:n-1]
		}
		for i, c := range cells {
			switch i {
			case n - 2:
				c = fitLabel(c, widths[i])
			case n - 1:
				c = fitReason(c, widths[i])
			}
			if i == n-1 {
				b.WriteString(c)
				break
			}
			pad := strings.Repeat(" ", widths[i]-runeLen(c)+gap)
			if i == 0 {
				// Pad, then colour: escape codes take no columns.
				b.WriteString(paint(row, c) + pad)
				continue
			}
			b.WriteString(c + pad)
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(-1, t.header)
	for i, r := range t.rows {
		line(i, r)
	}
}

// dropEmpty leaves out a middle column empty in every row (ISSUE on a
// board with no known reds): its width is the names'.
func (t table) dropEmpty() table {
	for i := len(t.header) - 3; i > 0; i-- {
		empty := true
		for _, r := range t.rows {
			empty = empty && r[i] == ""
		}
		if !empty {
			continue
		}
		out := table{header: slices.Delete(slices.Clone(t.header), i, i+1)}
		for _, r := range t.rows {
			out.rows = append(out.rows, slices.Delete(slices.Clone(r), i, i+1))
		}
		t = out
	}
	return t
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }

// FitMiddle shortens s to at most n runes by eliding its middle, so both
// the start of a name and its last part stay readable:
// TestGuardsCatchBreaks/…/crash-recovery.
func FitMiddle(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:max(n, 0)])
	}
	tail := (n - 1) / 2
	head := n - 1 - tail
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// fitReason fits a cause line: its last ": "-separated parts when they
// fill at least half the room ("…address already in use": a cause says
// what happened last), else its start, cut.
func fitReason(s string, n int) string {
	if runeLen(s) <= n {
		return s
	}
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], ": ")
		if j < 0 {
			break
		}
		i += j + 2
		if tail := s[i:]; runeLen(tail)+1 <= n {
			if 2*(runeLen(tail)+1) >= n {
				return "…" + tail
			}
			break
		}
	}
	return fitEnd(s, n)
}

// fitLabel fits a section label, eliding the test name's middle and
// keeping a " (package)" suffix whole when there is room for it.
func fitLabel(s string, n int) string {
	if i := strings.LastIndex(s, " ("); i > 0 && strings.HasSuffix(s, ")") && runeLen(s[i:])+8 < n {
		return FitMiddle(s[:i], n-runeLen(s[i:])) + s[i:]
	}
	return FitMiddle(s, n)
}

// wrap breaks text into lines of at most n runes at spaces; its leading
// spaces stay, indent starts every line after the first. A word longer
// than a line is cut.
func wrap(text string, n int, indent string) []string {
	var lines []string
	lead := text[:len(text)-len(strings.TrimLeft(text, " "))]
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = lead + word
		case runeLen(line)+1+runeLen(word) <= n:
			line += " " + word
		default:
			lines = append(lines, fitEnd(line, n))
			line = indent + word
		}
	}
	return append(lines, fitEnd(line, n))
}

// fitEnd cuts s to at most n runes, marking the cut with "…".
func fitEnd(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:max(n, 0)])
	}
	return string(r[:n-1]) + "…"
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
