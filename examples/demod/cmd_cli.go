package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/reproboard/reproboard/examples/demod/internal/tools"
	"github.com/reproboard/reproboard/examples/demod/internal/wire"
)

const cliUsage = "usage: demod cli TOOL JSON   (tools: list_projects, index_repository, search_graph)"

// toolCallWait bounds one tool call; indexing a large tree is the slow one.
const toolCallWait = 2 * time.Minute

// parseCLI checks the tool name and its JSON before any daemon is involved,
// so a typo never spawns one.
func parseCLI(args []string, stderr io.Writer) (func(*app) int, bool) {
	if len(args) == 0 || len(args) > 2 {
		fmt.Fprintln(stderr, cliUsage)
		return nil, false
	}
	tool := args[0]
	if !tools.Known(tool) {
		fmt.Fprintf(stderr, "unknown tool: %s\n", tool)
		return nil, false
	}
	raw := "{}"
	if len(args) == 2 {
		raw = args[1]
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(raw), &obj); err != nil || obj == nil {
		fmt.Fprintf(stderr, "error: the arguments of %s must be a JSON object, got %q\n", tool, raw)
		return nil, false
	}
	argsJSON := json.RawMessage(raw)
	if tool == "index_repository" {
		argsJSON = absPathArg(argsJSON)
	}
	return func(a *app) int { return a.cli(tool, argsJSON) }, true
}

func (a *app) cli(tool string, args json.RawMessage) int {
	resp, err := a.request(wire.Request{Op: wire.OpCall, Tool: tool, Args: args}, toolCallWait)
	if err != nil {
		return a.fail("%s: %v", tool, err)
	}
	if resp.Code == wire.CodeUnknownTool {
		fmt.Fprintf(a.stderr, "unknown tool: %s\n", tool)
		return 1
	}
	if !resp.OK {
		return a.fail("%s: %s", tool, resp.Error)
	}
	var out bytes.Buffer
	if json.Indent(&out, resp.Result, "", "  ") != nil {
		out.Reset()
		out.Write(resp.Result)
	}
	fmt.Fprintf(a.stdout, "%s\n", out.Bytes())
	return 0
}
