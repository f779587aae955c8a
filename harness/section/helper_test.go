package section

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
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

// daemonize starts this binary as a setsid daemon in helper mode mode,
// waits until it says ready (its signal handling and title are set up),
// and prints its pid, as a daemon's launcher does before it exits.
func daemonize(mode string) int {
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), helperEnv+"="+mode)
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	ready, err := child.StdoutPipe()
	if err == nil {
		err = child.Start()
	}
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	line, err := bufio.NewReader(ready).ReadString('\n')
	if err != nil || line != "ready\n" {
		fmt.Printf("error: the daemon said %q (%v)\n", line, err)
		return 1
	}
	fmt.Printf("daemon: started (pid %d)\n", child.Process.Pid)
	return 0
}

func helper(mode string, args []string) int {
	switch mode {
	case "daemonize":
		// Double fork: start a setsid daemon and exit, as daemons do.
		if len(args) > 0 && args[0] == "stubborn" {
			return daemonize("daemon-stubborn")
		}
		return daemonize("daemon")
	case "daemonize-envclear":
		// setsid -f env -i sleep 3601: detached, nothing in its environment.
		child := exec.Command("/bin/sleep", "3601")
		child.Env = []string{}
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := child.Start(); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Printf("daemon: started (pid %d)\n", child.Process.Pid)
		return 0
	case "daemonize-title":
		// A daemon that writes its title over its environment, as redis does.
		return daemonize("title-daemon")
	case "title-daemon":
		if err := overwriteEnviron("redis-server *:6379"); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Println("ready")
		time.Sleep(10 * time.Minute)
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
		for _, mode := range strings.Fields(os.Getenv("HARNESS_DAEMONS")) {
			res := s.Run(helperSpec(mode))
			fmt.Print(res.Output)
		}
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

// overwriteEnviron writes title over this process's initial environment
// block (env_start..env_end, fields 50 and 51 of /proc/self/stat), zeroing
// the rest: /proc/self/environ then shows the title and no variable.
func overwriteEnviron(title string) error {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return err
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	start, err1 := strconv.ParseUint(f[47], 10, 64)
	end, err2 := strconv.ParseUint(f[48], 10, 64)
	if err1 != nil || err2 != nil || end <= start {
		return fmt.Errorf("env_start/env_end unreadable: %v %v", err1, err2)
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	block := make([]byte, end-start)
	copy(block, title)
	if _, err := mem.WriteAt(block, int64(start)); err != nil {
		return err
	}
	env, _ := os.ReadFile("/proc/self/environ")
	if strings.Contains(string(env), "REPROBOARD_SECTION") {
		return fmt.Errorf("the marker is still readable: %q", env)
	}
	return nil
}
