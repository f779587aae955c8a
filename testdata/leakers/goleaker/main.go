// Command goleaker is an MCP server over stdio with one tool, put, that
// keeps LEAK_BYTES bytes per call under a key it refuses to repeat and
// churns CHURN_BYTES of garbage per call. It runs at the default GOGC
// unless its environment says otherwise. See ../README.md.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type putIn struct {
	Key string `json:"key" jsonschema:"a name not used before"`
}

func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			log.Fatalf("%s=%q: want a number of bytes", name, v)
		}
		return n
	}
	return def
}

var sink []byte // keeps the churn from being optimised away

func main() {
	leak, churn, exitAfter := envInt("LEAK_BYTES", 0), envInt("CHURN_BYTES", 256<<10), envInt("LEAK_EXIT_AFTER", 0)
	var mu sync.Mutex
	kept := map[string][]byte{}
	calls := 0
	s := mcp.NewServer(&mcp.Implementation{Name: "goleaker", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "put", Description: "Keep LEAK_BYTES under a new key."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in putIn) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if exitAfter > 0 && calls > exitAfter {
				fmt.Fprintf(os.Stderr, "goleaker: exiting after %d calls (LEAK_EXIT_AFTER)\n", exitAfter)
				os.Exit(3)
			}
			if leak > 0 {
				if _, dup := kept[in.Key]; dup {
					return nil, nil, fmt.Errorf("key %q exists already", in.Key)
				}
				b := make([]byte, leak)
				for i := range b {
					b[i] = byte(i)
				}
				kept[in.Key] = b
			}
			// Garbage in small pieces, as a server builds a reply.
			for n := 0; n < churn; n += 4096 {
				g := make([]byte, 4096)
				g[0], g[4095] = 1, 1
				sink = g
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "kept " + in.Key}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
