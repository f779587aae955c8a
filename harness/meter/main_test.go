package meter

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as the child process the sampler measures:
// re-executed with childEnv set, it obeys commands on stdin instead of
// running tests. Nothing outside the Go toolchain is needed.
const childEnv = "METER_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		runChild()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var retained [][]byte

// runChild reads "grow KiB" (allocate, touch and keep), "churn KiB"
// (allocate, touch and drop) and answers "ok" after each; it exits on EOF.
func runChild() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		kib, _ := strconv.Atoi(arg)
		buf := make([]byte, kib<<10)
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = 1 // touch every page so it is resident, not just reserved
		}
		switch cmd {
		case "grow":
			retained = append(retained, buf)
		case "churn":
			runtime.GC()
		}
		fmt.Println("ok")
	}
}

type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startChild(t testing.TB, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=1"}, env...)...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return c
}

// do sends one command and waits, at most 10s, for the child's "ok".
func (c *child) do(t testing.TB, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(c.in, line); err != nil {
		t.Fatalf("child %d: sending %q: %v", c.cmd.Process.Pid, line, err)
	}
	got := make(chan bool, 1)
	go func() { got <- c.out.Scan() && c.out.Text() == "ok" }()
	select {
	case ok := <-got:
		if !ok {
			t.Fatalf("child %d: no ok after %q (last output %q, err %v)", c.cmd.Process.Pid, line, c.out.Text(), c.out.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("child %d: waited 10s for ok after %q, got nothing", c.cmd.Process.Pid, line)
	}
}
