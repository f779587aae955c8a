package excerpt

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// OneLine keeps the first line of s, at most max bytes, never splitting a
// rune: table cells and summaries hold one line.
func OneLine(s string, max int) string {
	s = strings.TrimSpace(s)
	cut := false
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s, cut = strings.TrimSpace(s[:i]), true
	}
	if len(s) > max {
		n := max
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s, cut = s[:n], true
	}
	if cut {
		s += " …"
	}
	return s
}

// SplitElided separates the "...(N chars elided)...\n" header that
// Excerpt puts before a cut text from the text itself.
func SplitElided(s string) (elided int64, body string) {
	if !strings.HasPrefix(s, "...(") {
		return 0, s
	}
	head, rest, ok := strings.Cut(s, "\n")
	if !ok {
		return 0, s
	}
	if _, err := fmt.Sscanf(head, "...(%d chars elided)...", &elided); err != nil {
		return 0, s
	}
	return elided, rest
}

// OfTail is Excerpt for a text that may already be a tail:
// the header counts everything elided, earlier cuts included.
func OfTail(s string, limit int) string {
	before, body := SplitElided(s)
	cut := Excerpt(body, limit)
	now, kept := SplitElided(cut)
	if before+now == 0 {
		return kept
	}
	return fmt.Sprintf("...(%d chars elided)...\n%s", before+now, kept)
}
