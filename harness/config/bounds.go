package config

import (
	"fmt"
	"unicode/utf8"
)

// Bounds on boards.yaml. It is code-review surface in CI and the YAML
// parser's cost grows with nesting and token count, so a hostile file is
// refused by a linear scan before the parser sees it. A real boards.yaml
// is a few KiB, four levels deep, with a few hundred nodes. The size limit
// keeps the parse of any accepted file well under 64 MiB and 1 s: a
// 1 MiB file of 3,000 known_red entries allocated 66 MiB in 1.4 s on a
// loaded 2-core machine, a quarter of that stays near 16 MiB.
const (
	MaxSize   = 256 << 10 // bytes
	MaxDepth  = 32        // nested lists and mappings, flow and block together
	MaxNodes  = 20000     // keys, list items and flow entries, roughly
	MaxErrors = 50        // errors printed; the rest are counted
)

// prescan checks the bounds on the raw text in one pass and O(depth)
// memory. It knows just enough YAML to count nesting: quotes, comments,
// flow brackets, block indentation and block scalars. It also refuses
// control characters (a NUL in a reason is not text) and aliases: the
// parser would not expand them, but a later decoder might, and nothing in
// boards.yaml needs one.
func prescan(path string, data []byte) error {
	if len(data) > MaxSize {
		return fmt.Errorf("%s:1:1: the file is %d bytes, over the limit of %d (256 KiB); a boards.yaml is a few KiB, check that this is the right file", path, len(data), MaxSize)
	}
	var (
		line, col   = 1, 0
		indents     []int // the block indentation levels open
		flow        int   // open [ and {
		quote       byte  // ' or " while inside a quoted scalar
		comment     bool
		tokStart    = true // the next non-space char starts a token
		lineStart   = true
		scalarAt    = -1 // inside a block scalar whose line had this indent
		nodes       int
		lineIndent  int
		blockPrefix bool // still reading the indentation and "- " of a line
	)
	errAt := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d:%d: %s", path, line, col, fmt.Sprintf(format, args...))
	}
	depth := func() int { return len(indents) + flow }
	if err := controlChars(path, data); err != nil {
		return err
	}
	for i := 0; i < len(data); {
		size := 1
		c := data[i]
		col++
		if c == '\n' {
			line, col, comment, lineStart = line+1, 0, false, true
			if flow == 0 && quote == 0 {
				tokStart = true
			}
			i++
			continue
		}
		if lineStart {
			// A new line: measure its indentation and, in block context,
			// where it sits among the open levels.
			lineStart = false
			j := i
			for j < len(data) && data[j] == ' ' {
				j++
			}
			lineIndent = j - i
			rest := j
			blank := rest >= len(data) || data[rest] == '\n' || data[rest] == '\r' || data[rest] == '#'
			if scalarAt >= 0 && (blank || lineIndent > scalarAt) {
				// Block scalar content: text, not structure.
				for i < len(data) && data[i] != '\n' {
					i++
				}
				continue
			}
			scalarAt = -1
			if flow == 0 && quote == 0 && !blank {
				for len(indents) > 0 && indents[len(indents)-1] > lineIndent {
					indents = indents[:len(indents)-1]
				}
				if len(indents) == 0 || indents[len(indents)-1] < lineIndent {
					indents = append(indents, lineIndent)
				}
				blockPrefix = true
			}
			col = lineIndent + 1
			i = j
			if i >= len(data) {
				break
			}
			c = data[i]
		}
		switch {
		case comment:
		case quote == '"':
			if c == '\\' {
				i++
				col++
			} else if c == '"' {
				quote = 0
			}
		case quote == '\'':
			if c == '\'' {
				if i+1 < len(data) && data[i+1] == '\'' {
					i++
					col++
				} else {
					quote = 0
				}
			}
		case c == ' ' || c == '\t' || c == '\r':
		case c == '#' && (tokStart || i == 0 || data[i-1] == ' ' || data[i-1] == '\t'):
			comment = true
		case blockPrefix && flow == 0 && (c == '-' || c == '?') && (i+1 >= len(data) || data[i+1] == ' ' || data[i+1] == '\n' || data[i+1] == '\r'):
			// "- " opens a list item, one level deeper than its dash.
			indents = append(indents, col+1) // col is 1-based: the item's text starts 2 after the dash
			nodes++
			tokStart = true
		case tokStart && (c == '"' || c == '\''):
			quote, tokStart, blockPrefix = c, false, false
		case tokStart && (c == '[' || c == '{'):
			flow++
			nodes++
			blockPrefix = false
		case flow > 0 && (c == ']' || c == '}'):
			flow--
			tokStart = false
		case flow > 0 && c == ',':
			nodes++
			tokStart = true
		case c == ':' && (i+1 >= len(data) || data[i+1] == ' ' || data[i+1] == '\n' || data[i+1] == '\r' || flow > 0 && (data[i+1] == ',' || data[i+1] == ']' || data[i+1] == '}')):
			nodes++
			tokStart, blockPrefix = true, false
		case tokStart && (c == '&' || c == '!'):
			// An anchor or a tag is a property of the node after it: skip
			// its name, the node still starts a token.
			for i+1 < len(data) && data[i+1] != ' ' && data[i+1] != '\n' && data[i+1] != '\t' {
				i++
				col++
			}
		case tokStart && c == '*':
			return errAt("aliases (*name) are not supported in boards.yaml; write the value out")
		case tokStart && flow == 0 && (c == '|' || c == '>'):
			scalarAt = lineIndent
			tokStart, blockPrefix = false, false
		default:
			tokStart, blockPrefix = false, false
		}
		if d := depth(); d > MaxDepth {
			return errAt("nested %d levels deep, over the limit of %d; boards.yaml needs four", d, MaxDepth)
		}
		if nodes > MaxNodes {
			return errAt("more than %d keys and list items, over the limit; a boards.yaml holds a few hundred, split the file or drop entries", MaxNodes)
		}
		i += size
	}
	return nil
}

// controlChars refuses a control character anywhere in the text (tab,
// CR and LF aside): a NUL in a reason is not text, and it would reach
// terminals and reports.
func controlChars(path string, data []byte) error {
	line, col := 1, 0
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		i += size
		col++
		switch {
		case r == '\n':
			line, col = line+1, 0
		case (r < 0x20 && r != '\t' && r != '\r') || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return fmt.Errorf("%s:%d:%d: control character %U in the file; boards.yaml is text, remove it", path, line, col, r)
		}
	}
	return nil
}

// cut shortens a value quoted in a message: a 10 MB key is not echoed.
func cut(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:n], len(s))
}
