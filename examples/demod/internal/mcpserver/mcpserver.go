// Package mcpserver is demod's MCP front end: the official SDK's server
// with demod's tools, each forwarded to the daemon.
package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Backend runs a tool somewhere (the daemon) and returns its JSON result.
type Backend interface {
	Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error)
}

// Tool inputs; their JSON schemas are inferred by the SDK.
type (
	ListProjectsIn struct{}

	IndexRepositoryIn struct {
		RepoPath string `json:"repo_path" jsonschema:"directory to index; the project is named after it"`
	}

	SearchGraphIn struct {
		Project     string `json:"project,omitempty" jsonschema:"project name from list_projects; empty searches all"`
		NamePattern string `json:"name_pattern,omitempty" jsonschema:"regular expression matched against function names"`
		Limit       int    `json:"limit,omitempty" jsonschema:"maximum results (default 20, at most 500)"`
	}
)

// New builds the MCP server whose tools forward to b.
func New(b Backend, version string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "demod", Version: version}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "list_projects", Description: "List indexed projects with file and function counts."},
		forward[ListProjectsIn](b, "list_projects"))
	mcp.AddTool(s, &mcp.Tool{Name: "index_repository", Description: "Index a directory: its source files and the functions defined in them."},
		forward[IndexRepositoryIn](b, "index_repository"))
	mcp.AddTool(s, &mcp.Tool{Name: "search_graph", Description: "Find functions whose names match a regular expression."},
		forward[SearchGraphIn](b, "search_graph"))
	return s
}

func forward[In any](b Backend, tool string) mcp.ToolHandlerFor[In, any] {
	return func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		args, err := json.Marshal(in)
		if err != nil {
			return nil, nil, err
		}
		res, err := b.Call(ctx, tool, args)
		if err != nil {
			// A returned error becomes a tool result with isError set.
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(res)}}}, nil, nil
	}
}
