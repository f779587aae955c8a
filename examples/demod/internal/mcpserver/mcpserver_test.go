package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

type echo struct{}

func (echo) Call(_ context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	time.Sleep(50 * time.Millisecond) // answered after stdin has already ended
	return json.Marshal(map[string]any{"tool": tool, "args": args})
}

// TestMinimalInitializeAndDrainOnEOF: a raw client that sends the minimal
// initialize ({"capabilities":{}}, no protocolVersion), one tool call, and
// then closes stdin still gets both answers.
func TestMinimalInitializeAndDrainOnEOF(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_graph","arguments":{"name_pattern":"^A"}}}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := New(echo{}, "test").Run(ctx, DrainingStdio(strings.NewReader(in), &out, 5*time.Second)); err != nil && ctx.Err() != nil {
		t.Fatalf("server did not end within 10s of stdin EOF: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 answers (initialize, tools/call), got %d:\n%s", len(lines), out.String())
	}
	if !strings.Contains(lines[0], `"result"`) || !strings.Contains(lines[0], `"id":0`) {
		t.Errorf("initialize answer: %s", lines[0])
	}
	if !strings.Contains(lines[1], `\"tool\":\"search_graph\"`) || !strings.Contains(lines[1], `^A`) {
		t.Errorf("tools/call answer was not forwarded: %s", lines[1])
	}
}
