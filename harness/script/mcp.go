package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reproboard/reproboard/harness/excerpt"
	"github.com/reproboard/reproboard/harness/section"
)

// mcpRequestTimeout bounds one MCP request unless -timeout says otherwise.
const mcpRequestTimeout = 30 * time.Second

// mcpSession is an MCP client session over a spawned server's stdio.
type mcpSession struct {
	name       string
	proc       *section.Proc
	stderrPath string
	session    *mcp.ClientSession
}

func (m *mcpSession) stderrTail() string {
	data, err := os.ReadFile(m.stderrPath)
	if err != nil {
		return fmt.Sprintf("(no stderr: %v)", err)
	}
	if len(data) == 0 {
		return "(stderr empty)"
	}
	return excerpt.Excerpt(string(data), 0)
}

// callTool calls a tool and returns its text content; a tool error is
// returned as toolError.
func (m *mcpSession) callTool(ctx context.Context, tool string, args json.RawMessage) (string, error) {
	if m.session == nil {
		return "", fmt.Errorf("mcp %s: not initialized (run `mcp %s initialize` first)", m.name, m.name)
	}
	res, err := m.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	var text []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text = append(text, t.Text)
		}
	}
	out := strings.Join(text, "\n")
	if res.IsError {
		return out, &toolError{tool: tool, text: out}
	}
	return out, nil
}

type toolError struct{ tool, text string }

func (e *toolError) Error() string {
	return fmt.Sprintf("tool %s returned an error: %s", e.tool, e.text)
}

// abort ends the session without waiting: the section is ending and the
// backstop stops the server.
func (m *mcpSession) abort() {
	if m.session != nil {
		go m.session.Close()
	}
	m.proc.CloseStdin()
}

func (c *call) mcpSession(name string) (*mcpSession, error) {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	m, ok := c.st.mcps[name]
	if !ok {
		return nil, c.usagef("no MCP session named %s (start it with `mcp %s start cmd args...`)", name, name)
	}
	return m, nil
}

var cmdMCP = command{
	usage: "[!] mcp NAME start cmd args... | mcp NAME initialize [-timeout d] | [!] mcp NAME call [-timeout d] TOOL JSON | mcp NAME close [-timeout d] — an MCP session over stdio; ! call expects a tool error",
	neg:   negSelf,
	bang:  "`call` expects the tool to return an error",
	run: func(c *call) error {
		if len(c.args) < 2 {
			return c.usagef("need a session name and a verb")
		}
		name, verb := c.args[0], c.args[1]
		c.args = c.args[2:]
		if c.neg && verb != "call" {
			return c.usagef("only `mcp NAME call` takes !")
		}
		switch verb {
		case "start":
			return mcpStart(c, name)
		case "initialize":
			return mcpInitialize(c, name)
		case "call":
			return mcpCall(c, name)
		case "close":
			return mcpClose(c, name)
		}
		return c.usagef("unknown verb %q", verb)
	},
}

func mcpStart(c *call, name string) error {
	if len(c.args) == 0 {
		return c.usagef("mcp %s start needs a command", name)
	}
	c.st.mu.Lock()
	_, dup := c.st.mcps[name]
	c.st.mu.Unlock()
	if dup {
		return c.usagef("an MCP session named %s exists already", name)
	}
	argv, err := c.argv(c.args)
	if err != nil {
		return err
	}
	m := &mcpSession{name: name, stderrPath: filepath.Join(c.st.sec.Root, "mcp-"+name+".stderr")}
	m.proc, err = c.st.sec.Start("mcp "+name, c.rawSpec(argv, m.stderrPath))
	if err != nil {
		return err
	}
	c.st.mu.Lock()
	c.st.mcps[name] = m
	c.st.mu.Unlock()
	fmt.Fprintf(c.stdout(), "mcp %s started (pid %d)\n", name, m.proc.Pid())
	return nil
}

func mcpInitialize(c *call, name string) error {
	timeout := c.flags.Duration("timeout", mcpRequestTimeout, "request timeout")
	if err := c.parse(0, 0); err != nil {
		return err
	}
	m, err := c.mcpSession(name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.within(*timeout))
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "reproboard", Version: "v1"}, nil)
	session, err := client.Connect(ctx, &mcp.IOTransport{Reader: m.proc.Stdout(), Writer: m.proc.Stdin()}, nil)
	if err != nil {
		state := "still running"
		if m.proc.Exited() {
			res, _ := m.proc.Wait(0)
			state = fmt.Sprintf("exited rc=%d", res.RC)
		}
		return fmt.Errorf("mcp %s initialize: %v (server pid %d %s)\nsession stderr:\n%s", name, err, m.proc.Pid(), state, m.stderrTail())
	}
	m.session = session
	if info := session.InitializeResult(); info != nil && info.ServerInfo != nil {
		fmt.Fprintf(c.stdout(), "mcp %s initialized: server %s %s, protocol %s\n", name, info.ServerInfo.Name, info.ServerInfo.Version, info.ProtocolVersion)
	}
	return nil
}

func mcpCall(c *call, name string) error {
	timeout := c.flags.Duration("timeout", mcpRequestTimeout, "request timeout")
	if err := c.parse(1, 2); err != nil {
		return err
	}
	m, err := c.mcpSession(name)
	if err != nil {
		return err
	}
	args := json.RawMessage("{}")
	if len(c.args) == 2 {
		if !json.Valid([]byte(c.args[1])) {
			return c.usagef("arguments %q are not valid JSON", c.args[1])
		}
		args = json.RawMessage(c.args[1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.within(*timeout))
	defer cancel()
	start := time.Now()
	out, err := m.callTool(ctx, c.args[0], args)
	fmt.Fprintln(c.stdout(), out)
	var te *toolError
	switch {
	case errors.As(err, &te) && c.neg:
		return nil
	case err != nil:
		return fmt.Errorf("mcp %s call %s after %s: %v\nsession stderr:\n%s", name, c.args[0], time.Since(start).Round(time.Millisecond), err, m.stderrTail())
	case c.neg:
		return fmt.Errorf("mcp %s call %s: unexpected success: %s", name, c.args[0], excerpt.Excerpt(out, 400))
	}
	return nil
}

func mcpClose(c *call, name string) error {
	timeout := c.flags.Duration("timeout", mcpRequestTimeout, "how long the server gets to exit")
	if err := c.parse(0, 0); err != nil {
		return err
	}
	m, err := c.mcpSession(name)
	if err != nil {
		return err
	}
	if m.session != nil {
		done := make(chan error, 1)
		go func() { done <- m.session.Close() }()
		select {
		case <-done:
		case <-time.After(c.within(*timeout)):
		}
	}
	m.proc.CloseStdin()
	res, err := m.proc.Wait(c.within(*timeout))
	if err != nil {
		return fmt.Errorf("mcp %s close: the server did not exit after stdin EOF: %v\nsession stderr:\n%s", name, err, m.stderrTail())
	}
	c.st.mu.Lock()
	delete(c.st.mcps, name)
	c.st.mu.Unlock()
	if res.RC != 0 {
		return fmt.Errorf("mcp %s close: the server exited %d\nsession stderr:\n%s", name, res.RC, m.stderrTail())
	}
	return nil
}
