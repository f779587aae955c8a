package script

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reproboard/reproboard/harness/config"
	"github.com/reproboard/reproboard/harness/section"
	"github.com/reproboard/reproboard/harness/target"
)

// The test binary doubles as the target of the engine's own scripts, a
// small fake daemon: with FAKE_TARGET=1 it runs fake() instead of tests.
func TestMain(m *testing.M) {
	if os.Getenv("FAKE_TARGET") == "1" {
		os.Exit(fake(os.Args[1:]))
	}
	os.Setenv("REPROBOARD_TEST_PASS", "outer") // passed to the fake by its profile's env_pass
	os.Exit(section.Main(m))
}

func fakeTarget() *target.Target {
	return &target.Target{
		Target: &config.Target{Name: "fake", CacheVar: "FAKE_CACHE", RuntimeVar: "FAKE_RUNTIME",
			Log: "logs/fake.log", Env: map[string]string{"FAKE_TARGET": "1", "FAKE_DATA": "$CACHE/data",
				"FAKE_PASSED": "${REPROBOARD_TEST_PASS}-and-$FAKE_DATA"}, EnvPass: []string{"REPROBOARD_TEST_PASS"},
			Features: []string{"fakeui"}},
		Path: os.Args[0],
	}
}

func fake(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: fake CMD")
		return 2
	}
	if strings.HasPrefix(args[0], "-") { // flags of its own: print them back
		fmt.Println(strings.Join(args, " "))
		return 0
	}
	switch args[0] {
	case "echo":
		fmt.Println(strings.Join(args[1:], " "))
	case "cat":
		io.Copy(os.Stdout, os.Stdin)
	case "printenv":
		v, ok := os.LookupEnv(args[1])
		if !ok {
			fmt.Fprintf(os.Stderr, "%s is not set\n", args[1])
			return 1
		}
		fmt.Println(v)
	case "fail":
		fmt.Println("some preamble")
		fmt.Fprintln(os.Stderr, "boom: the fake failed")
		return 3
	case "hang":
		fmt.Println("partial output before hanging")
		time.Sleep(10 * time.Minute)
	case "exit-now":
		fmt.Fprintln(os.Stderr, "bye from stderr")
		return 4
	case "daemon":
		return fakeDaemon(args[1:])
	case "count":
		// Fails until it has been called N times.
		n, _ := strconv.Atoi(args[2])
		data, _ := os.ReadFile(args[1])
		c, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		c++
		os.WriteFile(args[1], []byte(strconv.Itoa(c)), 0o644)
		if c < n {
			fmt.Fprintf(os.Stderr, "not yet: %d of %d\n", c, n)
			return 1
		}
		fmt.Println("ready after", c)
	case "storm-client":
		// Client 13 (by arrival) hangs; the others succeed.
		for i := 0; ; i++ {
			f, err := os.OpenFile(filepath.Join(args[1], fmt.Sprintf("slot-%d", i)), os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				continue
			}
			f.Close()
			if i == 13 {
				fmt.Printf("client %d partial output\n", i)
				time.Sleep(10 * time.Minute)
			}
			fmt.Printf("client %d ok\n", i)
			return 0
		}
	case "storm-fail":
		// Client 2 (by arrival) exits 1 with nothing on stdout.
		for i := 0; ; i++ {
			f, err := os.OpenFile(filepath.Join(args[1], fmt.Sprintf("slot-%d", i)), os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				continue
			}
			f.Close()
			if i == 2 {
				fmt.Fprintf(os.Stderr, "client %d refused\n", i)
				return 1
			}
			fmt.Printf("client %d ok\n", i)
			return 0
		}
	case "serve":
		// Accepts connections on 127.0.0.1:PORT until stdin closes.
		l, err := net.Listen("tcp", "127.0.0.1:"+args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "listen:", err)
			return 1
		}
		fmt.Println("listening")
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		io.Copy(io.Discard, os.Stdin)
		l.Close()
	case "dial":
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+args[1], time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dial:", err)
			return 1
		}
		c.Close()
		fmt.Println("connected")
	case "mkdb", "trywrite":
		db, err := sql.Open("sqlite", "file:"+args[1]+"?_pragma=busy_timeout(0)")
		if err == nil {
			_, err = db.Exec("CREATE TABLE IF NOT EXISTS t (x INTEGER); INSERT INTO t VALUES (1)")
			db.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "write:", err)
			return 1
		}
		fmt.Println("wrote", args[1])
	case "writelater":
		time.Sleep(300 * time.Millisecond)
		os.WriteFile(args[1], []byte("not yet\n"), 0o644)
		time.Sleep(300 * time.Millisecond)
		os.WriteFile(args[1], []byte(args[2]+"\n"), 0o644)
	case "log":
		path := filepath.Join(os.Getenv("FAKE_CACHE"), "logs", "fake.log")
		os.MkdirAll(filepath.Dir(path), 0o755)
		f, _ := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		fmt.Fprintln(f, strings.Join(args[1:], " "))
		f.Close()
	case "writehome":
		p := filepath.Join(os.Getenv("HOME"), ".cache", "fake")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x"), 0o644)
		fmt.Println("wrote", p)
	case "lines":
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			if in.Text() == "quit" {
				fmt.Fprintln(os.Stderr, "quitting")
				return 5
			}
			fmt.Println("echo:", in.Text())
		}
	case "mcp":
		return fakeMCP()
	default:
		fmt.Fprintln(os.Stderr, "unknown fake command", args[0])
		return 2
	}
	return 0
}

func fakeDaemon(args []string) int {
	switch args[0] {
	case "start":
		child := exec.Command(os.Args[0], "daemon", "run")
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		ready, _ := child.StdoutPipe()
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		bufio.NewReader(ready).ReadString('\n')
		fmt.Printf("daemon: started (permanent, pid %d)\n", child.Process.Pid)
	case "run":
		fmt.Println("ready")
		time.Sleep(10 * time.Minute)
	}
	return 0
}

func fakeMCP() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "v0"}, nil)
	type echoArgs struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo text"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "always fails"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, fmt.Errorf("the fake tool failed on purpose")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "answers after 30s"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		select {
		case <-ctx.Done():
		case <-time.After(30 * time.Second):
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil, nil
	})
	// grow keeps 64 KiB per call, written so that it is resident: a leak.
	var kept [][]byte
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "leaks 64 KiB per call"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		b := make([]byte, 64<<10)
		for i := range b {
			b[i] = byte(i)
		}
		kept = append(kept, b)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(len(kept))}}}, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcp:", err)
		return 1
	}
	return 0
}
