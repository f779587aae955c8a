package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/outcome"
)

// WriteJSON writes the board in its versioned JSON form (board.Schema).
func WriteJSON(w io.Writer, b *board.Board) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(b)
}

// ReadJSON reads a board written by WriteJSON; name is used in errors.
func ReadJSON(r io.Reader, name string) (*board.Board, error) {
	var b board.Board
	dec := json.NewDecoder(r)
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("%s: not a board JSON report: %v", name, err)
	}
	if b.Schema != board.Schema {
		return nil, fmt.Errorf("%s: schema %q, want %q; it was written by another reproboard version, rerun the board with this one", name, b.Schema, board.Schema)
	}
	if b.Sections == nil {
		b.Sections = []board.Section{}
	}
	for i, s := range b.Sections {
		o, err := outcome.Parse(string(s.Outcome))
		if err != nil {
			return nil, fmt.Errorf("%s: section %s: %v", name, s.Test, err)
		}
		b.Sections[i].Outcome = o
		if s.Artifacts == nil {
			b.Sections[i].Artifacts = map[string]string{}
		}
	}
	return &b, nil
}
