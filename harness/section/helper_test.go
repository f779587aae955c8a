package section

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the processes the tests start: with
// SECTION_HELPER set, TestMain runs that helper instead of the tests.
const helperEnv = "SECTION_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode, os.Args[1:]))
	}
	os.Exit(Main(m))
}

func helperCmd(mode string, args ...string) []string {
	return append([]string{os.Args[0], mode}, args...)
}

func helperSpec(mode string, args ...string) Spec {
	return Spec{Args: append([]string{os.Args[0]}, args...), Env: []string{helperEnv + "=" + mode}}
}

func helper(mode string, args []string) int {
	switch mode {
	case "daemonize":
		// Double fork: start a setsid daemon and exit, as daemons do.
		stubborn := len(args) > 0 && args[0] == "stubborn"
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), helperEnv+"=daemon")
		if stubborn {
			child.Env = append(child.Env, helperEnv+"=daemon-stubborn")
		}
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		ready, err := child.StdoutPipe()
		if err == nil {
			err = child.Start()
		}
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		// Wait until the daemon has set up its signal handling.
		if _, err := bufio.NewReader(ready).ReadString('\n'); err != nil {
			fmt.Println("error: daemon never said ready:", err)
			return 1
		}
		fmt.Printf("daemon: started (pid %d)\n", child.Process.Pid)
		return 0
	case "daemon":
		fmt.Println("ready")
		time.Sleep(10 * time.Minute)
		return 0
	case "daemon-stubborn":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(10 * time.Minute)
		return 0
	case "hang":
		fmt.Println("partial output before the hang")
		time.Sleep(10 * time.Minute)
		return 0
	case "flood":
		n, _ := strconv.Atoi(args[0])
		chunk := make([]byte, 64<<10)
		for i := range chunk {
			chunk[i] = 'z'
		}
		for written := 0; written < n; written += len(chunk) {
			os.Stdout.Write(chunk)
		}
		fmt.Println("\nflood done")
		return 0
	case "grandchild-holds-stdout":
		// The grandchild inherits stdout and outlives us.
		gc := exec.Command("sleep", "30")
		gc.Stdout = os.Stdout
		if err := gc.Start(); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Printf("grandchild pid %d\n", gc.Process.Pid)
		return 0
	case "write-home":
		path := filepath.Join(os.Getenv("HOME"), ".cache", "x")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fmt.Println(err)
			return 1
		}
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println("wrote", path)
		return 0
	case "harness-child":
		// A harness that starts a run, a section and a setsid daemon, then
		// waits to be killed without cleaning up.
		r, err := DefaultRun()
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		s, err := New(r, Config{Name: "residue"})
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		res := s.Run(helperSpec("daemonize"))
		fmt.Print(res.Output)
		fmt.Printf("run %s root %s\n", r.ID, s.Root)
		time.Sleep(10 * time.Minute)
		return 0
	case "echo-stdin":
		buf := make([]byte, 4096)
		for {
			n, err := os.Stdin.Read(buf)
			if n > 0 {
				fmt.Printf("got: %s", buf[:n])
			}
			if err != nil {
				fmt.Println("stdin closed")
				return 3
			}
		}
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}
