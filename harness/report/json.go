package report

import (
	"bytes"
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

// ReadJSON reads a board written by WriteJSON and checks it against the
// schema (SCHEMA.md): every required field present and not null, no
// unknown field, valid outcomes, shard and exit code. name is used in
// errors. merge reads what CI jobs uploaded; a truncated or hand-made file
// must not merge as an empty green board.
func ReadJSON(r io.Reader, name string) (*board.Board, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxJSON+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(data) > MaxJSON {
		return nil, fmt.Errorf("%s: over %d MiB, not a board JSON report", name, MaxJSON>>20)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, fmt.Errorf("%s: not a board JSON report: %v", name, err)
	}
	if s := string(fields["schema"]); s != `"`+board.Schema+`"` {
		return nil, fmt.Errorf("%s: schema %s, want %q; it was written by another reproboard version, rerun the board with this one", name, orMissing(s), board.Schema)
	}
	for _, k := range []string{"board", "target", "gating", "strict", "platform", "exit_code", "exit_reason", "sections", "counts"} {
		if v, ok := fields[k]; !ok || string(v) == "null" {
			return nil, fmt.Errorf("%s: field %q is missing or null; a %s report always has it (see harness/report/SCHEMA.md)", name, k, board.Schema)
		}
	}
	var b board.Board
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("%s: not a %s report: %v", name, board.Schema, err)
	}
	if b.Name == "" {
		return nil, fmt.Errorf("%s: field \"board\" is empty; it names the board", name)
	}
	if b.Shard != "" {
		if _, _, err := outcome.ParseShard(b.Shard); err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
	}
	switch b.ExitCode {
	case outcome.ExitGreen, outcome.ExitRegression, outcome.ExitSetup:
	default:
		return nil, fmt.Errorf("%s: exit_code %d, want 0, 1 or 2", name, b.ExitCode)
	}
	for i, s := range b.Sections {
		if s.Test == "" || s.Package == "" {
			return nil, fmt.Errorf("%s: section %d has no test or package", name, i)
		}
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

// MaxJSON bounds a board JSON report merge reads.
const MaxJSON = 256 << 20

func orMissing(s string) string {
	if s == "" {
		return "missing"
	}
	return s
}
