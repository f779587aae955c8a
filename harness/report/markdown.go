package report

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"sort"
	"strings"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/excerpt"
	"github.com/reproboard/reproboard/harness/history"
	"github.com/reproboard/reproboard/harness/outcome"
)

// MarkdownLimit is the most a Markdown report may weigh: GitHub refuses a
// step summary over 1 MiB, so the report stays under it with room to spare.
const MarkdownLimit = 1<<20 - 4<<10

// MarkdownOptions shape the Markdown report.
type MarkdownOptions struct {
	Limit int // bytes; MarkdownLimit when 0
	// History is what the history says about each board, by board name:
	// its "what changed" block comes first. Nil: no history.
	History map[string]*history.Analysis
	// CollapseGreen shows GREEN sections as one row with their count (the
	// step summary: what changed matters, the JSON and HTML list the rest).
	CollapseGreen bool
}

// WriteMarkdown writes the board for a CI step summary: a heading with the
// exit code, a table, then each non-GREEN section's excerpt in <details>.
// The report always fits Limit: excerpts share what the tables leave, each
// cut to its tail, and past half the limit table rows are summarised.
func WriteMarkdown(w io.Writer, b *board.Board, opts MarkdownOptions) error {
	return WriteMarkdownBoards(w, []*board.Board{b}, opts)
}

// WriteMarkdownBoards writes boards run together as one document: with
// several, an overall line first (the combined exit code and each board's),
// then each board as WriteMarkdown shows it, a heading level down. The
// whole document fits Limit: the tables share half of it and the excerpts
// of all boards share what is left, so boards with huge outputs are cut
// first and a small excerpt is shown whole.
func WriteMarkdownBoards(w io.Writer, boards []*board.Board, opts MarkdownOptions) error {
	if len(boards) == 0 {
		return fmt.Errorf("no board to report")
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = MarkdownLimit
	}
	multi := len(boards) > 1
	var head bytes.Buffer
	level := "##"
	if multi {
		level = "###"
		code, reason := board.Overall(boards)
		fmt.Fprintf(&head, "## %s reproboard — exit %d (%s)\n\n%s.\n\n", exitIcon(code), code, board.ExitMeaning(code), mdText(reason))
		head.WriteString("| board | kind | exit | sections | why |\n|---|---|---|---|---|\n")
		for _, b := range boards {
			fmt.Fprintf(&head, "| %s %s | %s | %d | %s | %s |\n", exitIcon(b.ExitCode), mdText(b.Name), gatingWord(b.Gating),
				b.ExitCode, mdText(CountsLine(b.Counts)), mdText(excerpt.OneLine(b.ExitReason, 300)))
		}
	}

	// Each board: its heading and facts (fixed), its table rows (cut to a
	// share of half the limit), its problems and skips (fixed), its
	// excerpt blocks (cut to a share of what is left).
	type block struct {
		summary, text string
		size          int // what the block may take; 0: left out
	}
	type mdBoard struct {
		top, tail strings.Builder
		rows      []string
		shown     int // rows that fit
		blocks    []*block
	}
	const moreRow = "| … | | | %d more section(s) not shown, to stay under the step summary limit; see the JSON or HTML report | |\n"
	mbs := make([]*mdBoard, len(boards))
	fixed := head.Len()
	for i, b := range boards {
		mb := &mdBoard{}
		mbs[i] = mb
		if multi {
			mb.top.WriteString("\n")
		}
		fmt.Fprintf(&mb.top, "%s %s board %s — exit %d\n\n", level, exitIcon(b.ExitCode), mdText(b.Name), b.ExitCode)
		mb.top.WriteString(markdownChanges(opts.History[b.Name]))
		fmt.Fprintf(&mb.top, "%s board, target `%s`, %s%s. %s. Exit %d: %s.\n\n", gatingWord(b.Gating), mdCode(b.Target), mdText(b.Platform), shardNote(b.Shard), CountsLine(b.Counts), b.ExitCode, mdText(b.ExitReason))
		if len(b.Partial) > 0 {
			fmt.Fprintf(&mb.top, "**%s**\n\n", mdText(PartialLine(b)))
		}
		mb.top.WriteString("| outcome | issue | duration | section | reason |\n|---|---|---|---|---|\n")
		multiPkg := packageCount(b) > 1
		greens := 0
		for _, s := range b.Sections {
			if opts.CollapseGreen && s.Outcome == outcome.Green {
				greens++
				continue
			}
			mb.rows = append(mb.rows, fmt.Sprintf("| %s | %s | %s | `%s` | %s |\n", mdOutcome(s.Outcome), mdIssue(s.Issue),
				formatSeconds(s.Duration), mdCode(sectionLabel(s, multiPkg)), mdText(excerpt.OneLine(s.Reason, 200))))
		}
		if greens > 0 {
			mb.rows = append(mb.rows, fmt.Sprintf("| GREEN | | | %d section(s) | collapsed: the JSON and HTML reports list them |\n", greens))
		}
		for _, p := range b.Problems {
			fmt.Fprintf(&mb.tail, "\n**PROBLEM %s**: %s\n", mdText(p.Kind), mdText(excerpt.OneLine(p.Message, 500)))
		}
		if len(b.Skipped) > 0 {
			fmt.Fprintf(&mb.tail, "\n%d section(s) skipped, not counted.\n", len(b.Skipped))
		}
		for _, s := range b.Sections {
			if len(s.Attempts) > 1 {
				var as []string
				for i, a := range s.Attempts {
					as = append(as, fmt.Sprintf("%d. %s", i+1, excerpt.OneLine(AttemptLine(a), 200)))
				}
				fmt.Fprintf(&mb.tail, "\n**%s** `%s`, %d attempts: %s\n", s.Outcome, mdCode(sectionLabel(s, multiPkg)), len(s.Attempts), mdText(strings.Join(as, "; ")))
			}
		}
		for _, s := range b.Sections {
			if s.Outcome != outcome.Green && s.Excerpt != "" {
				mb.blocks = append(mb.blocks, &block{summary: fmt.Sprintf("%s %s: %s", s.Outcome, sectionLabel(s, multiPkg), excerpt.OneLine(s.Reason, 200)), text: s.Excerpt})
			}
		}
		for _, p := range b.Problems {
			if p.Excerpt != "" {
				mb.blocks = append(mb.blocks, &block{summary: "PROBLEM " + excerpt.OneLine(p.Message, 200), text: p.Excerpt})
			}
		}
		fixed += mb.top.Len() + mb.tail.Len() + len(fmt.Sprintf(moreRow, len(b.Sections)))
	}

	// Tables: all rows share half the limit.
	needs := make([]int, len(mbs))
	for i, mb := range mbs {
		for _, r := range mb.rows {
			needs[i] += len(r)
		}
	}
	used := fixed
	for i, share := range shareOut(needs, limit/2-fixed) {
		mb := mbs[i]
		for n := 0; mb.shown < len(mb.rows) && n+len(mb.rows[mb.shown]) <= share; mb.shown++ {
			n += len(mb.rows[mb.shown])
			used += len(mb.rows[mb.shown])
		}
	}

	// Excerpts: every block of every board shares what is left. A block
	// too small to be useful is left out (a one-line note instead), and the
	// others share again.
	const footer = "\n_Excerpts are output tails; the JSON and HTML reports hold the rest._\n"
	const closing = "\n</details>\n"
	opening := func(bl *block) string {
		return fmt.Sprintf("\n<details><summary>%s</summary>\n\n", html.EscapeString(bl.summary))
	}
	leftOut := func(bl *block) string {
		return fmt.Sprintf("\n%s — excerpt left out to stay under the step summary limit\n", mdText(bl.summary))
	}
	// Fences (16 bytes at most), "text", newlines and the elided header
	// tailExcerpt puts before a cut text take at most 128 bytes.
	overhead := func(bl *block) int { return len(opening(bl)) + len(closing) + 128 }
	var all []*block
	for _, mb := range mbs {
		all = append(all, mb.blocks...)
	}
	out := map[*block]bool{}
	for {
		room := limit - used - len(footer)
		var in []*block
		needs = needs[:0]
		for _, bl := range all {
			if out[bl] {
				room -= len(leftOut(bl))
				continue
			}
			in = append(in, bl)
			needs = append(needs, len(bl.text)+overhead(bl))
		}
		changed := false
		for i, share := range shareOut(needs, room) {
			bl := in[i]
			bl.size = share - overhead(bl)
			if bl.size < min(200, len(bl.text)) {
				out[bl], bl.size, changed = true, 0, true
				break // one at a time: the others' shares grow
			}
		}
		if !changed {
			break
		}
	}

	var buf bytes.Buffer
	buf.Grow(limit)
	buf.Write(head.Bytes())
	for _, mb := range mbs {
		buf.WriteString(mb.top.String())
		for _, r := range mb.rows[:mb.shown] {
			buf.WriteString(r)
		}
		if mb.shown < len(mb.rows) {
			fmt.Fprintf(&buf, moreRow, len(mb.rows)-mb.shown)
		}
		buf.WriteString(mb.tail.String())
		for _, bl := range mb.blocks {
			if out[bl] {
				buf.WriteString(leftOut(bl))
				continue
			}
			text := strings.TrimRight(excerpt.OfTail(bl.text, bl.size), "\n")
			if longestRun(text, '`') > 15 { // a fence longer than the text it guards
				text = strings.ReplaceAll(text, "`", "'")
			}
			fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
			buf.WriteString(opening(bl))
			fmt.Fprintf(&buf, "%stext\n%s\n%s\n", fence, text, fence)
			buf.WriteString(closing)
		}
	}
	if len(all) > 0 {
		buf.WriteString(footer)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// shareOut divides total among needs: each gets what it needs if that is
// no more than an equal share of what the smaller needs leave, else that
// share. The shares sum to at most total (none is negative).
func shareOut(needs []int, total int) []int {
	shares := make([]int, len(needs))
	order := make([]int, len(needs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return needs[order[a]] < needs[order[b]] })
	left := max(total, 0)
	for k, i := range order {
		share := min(needs[i], left/(len(order)-k))
		shares[i] = share
		left -= share
	}
	return shares
}

func exitIcon(code int) string {
	switch code {
	case outcome.ExitRegression:
		return "❌"
	case outcome.ExitSetup:
		return "⚠️"
	}
	return "✅"
}

func mdOutcome(o outcome.Outcome) string {
	if o == outcome.Green {
		return string(o)
	}
	return "**" + string(o) + "**"
}

func mdIssue(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf("#%d", n)
}

// mdText makes text safe in a table cell: no line breaks, no cell
// separators, no HTML.
func mdText(s string) string {
	s = strings.NewReplacer("\n", " ", "\r", " ", "|", `\|`).Replace(s)
	return html.EscapeString(s)
}

func mdCode(s string) string {
	return strings.NewReplacer("`", "'", "|", `\|`, "\n", " ").Replace(s)
}

func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}
