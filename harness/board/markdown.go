package board

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/reproboard/reproboard/harness/outcome"
)

// MarkdownLimit is the most a Markdown report may weigh: GitHub refuses a
// step summary over 1 MiB, so the report stays under it with room to spare.
const MarkdownLimit = 1<<20 - 4<<10

// MarkdownOptions shape the Markdown report.
type MarkdownOptions struct {
	Limit int // bytes; MarkdownLimit when 0
}

// WriteMarkdown writes the board for a CI step summary: a heading with the
// exit code, a table, then each non-GREEN section's excerpt in <details>.
// The report always fits Limit: excerpts share what the table leaves, each
// cut to its tail, and past half the limit table rows are summarised.
func WriteMarkdown(w io.Writer, b *Board, opts MarkdownOptions) error {
	limit := opts.Limit
	if limit <= 0 {
		limit = MarkdownLimit
	}
	var buf bytes.Buffer
	icon := "✅"
	switch b.ExitCode {
	case outcome.ExitRegression:
		icon = "❌"
	case outcome.ExitSetup:
		icon = "⚠️"
	}
	fmt.Fprintf(&buf, "## %s board %s — exit %d\n\n", icon, mdText(b.Name), b.ExitCode)
	fmt.Fprintf(&buf, "%s board, target `%s`, %s%s. %s. Exit %d: %s.\n\n", gatingWord(b.Gating), mdCode(b.Target), mdText(b.Platform), shardNote(b.Shard), CountsLine(b.Counts), b.ExitCode, mdText(b.ExitReason))
	buf.WriteString("| outcome | issue | duration | section | reason |\n|---|---|---|---|---|\n")
	multiPkg := packageCount(b) > 1
	for i, s := range b.Sections {
		row := fmt.Sprintf("| %s | %s | %s | `%s` | %s |\n", mdOutcome(s.Outcome), mdIssue(s.Issue),
			formatSeconds(s.Duration), mdCode(sectionLabel(s, multiPkg)), mdText(oneLine(s.Reason, 200)))
		if buf.Len()+len(row) > limit/2 {
			fmt.Fprintf(&buf, "| … | | | %d more section(s) not shown, to stay under the step summary limit; see the JSON or HTML report | |\n", len(b.Sections)-i)
			break
		}
		buf.WriteString(row)
	}
	for _, p := range b.Problems {
		fmt.Fprintf(&buf, "\n**PROBLEM %s**: %s\n", mdText(p.Kind), mdText(oneLine(p.Message, 500)))
	}
	if len(b.Skipped) > 0 {
		fmt.Fprintf(&buf, "\n%d section(s) skipped, not counted.\n", len(b.Skipped))
	}

	type block struct{ summary, text string }
	var blocks []block
	for _, s := range b.Sections {
		if s.Outcome != outcome.Green && s.Excerpt != "" {
			blocks = append(blocks, block{fmt.Sprintf("%s %s: %s", s.Outcome, sectionLabel(s, multiPkg), oneLine(s.Reason, 200)), s.Excerpt})
		}
	}
	for _, p := range b.Problems {
		if p.Excerpt != "" {
			blocks = append(blocks, block{"PROBLEM " + oneLine(p.Message, 200), p.Excerpt})
		}
	}
	const footer = "\n_Excerpts are output tails; the JSON and HTML reports hold the rest._\n"
	for i, bl := range blocks {
		open := fmt.Sprintf("\n<details><summary>%s</summary>\n\n", html.EscapeString(bl.summary))
		const closing = "\n</details>\n"
		// Each remaining block gets an equal share of what is left.
		share := (limit-buf.Len()-len(footer))/(len(blocks)-i) - len(open) - len(closing) - 64
		if share < 200 {
			fmt.Fprintf(&buf, "\n%s — excerpt left out to stay under the step summary limit\n", mdText(bl.summary))
			continue
		}
		text := strings.TrimRight(tailExcerpt(bl.text, share), "\n")
		if longestRun(text, '`') > 15 { // a fence longer than the text it guards
			text = strings.ReplaceAll(text, "`", "'")
		}
		fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
		buf.WriteString(open)
		fmt.Fprintf(&buf, "%stext\n%s\n%s\n", fence, text, fence)
		buf.WriteString(closing)
	}
	if len(blocks) > 0 {
		buf.WriteString(footer)
	}
	_, err := w.Write(buf.Bytes())
	return err
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
