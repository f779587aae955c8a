package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// adopterModule writes a module of someone else's (through a replace of
// this repository) whose two boards guard two different programs: alpha,
// with an env: that expands section and passed variables, and beta.
func adopterModule(t *testing.T) string {
	t.Helper()
	mod, gosum := replacingModule(t, "example.com/adopter")
	program := func(name string) string {
		return `package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "env" {
		fmt.Println(os.Getenv(os.Args[2]))
		return
	}
	fmt.Println("` + name + `", strings.Join(os.Args[1:], " "))
}
`
	}
	guard := func(pkg string) string {
		return `package ` + pkg + `

import (
	"os"
	"testing"

	"github.com/reproboard/reproboard/harness/script"
	"github.com/reproboard/reproboard/harness/section"
)

func TestMain(m *testing.M) { os.Exit(section.Main(m)) }

func TestGuards(t *testing.T) { script.Run(t, script.Params{Dir: "testdata"}) }
`
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": mod,
		"go.sum": gosum,
		"boards.yaml": `targets:
  alpha:
    build: ./cmd/alpha
    env:
      ALPHA_DATA: $CACHE/alpha
      ALPHA_FROM: ${ADOPTER_OUTER}-via-$HOME
    env_pass: [ADOPTER_OUTER]
  beta:
    build: ./cmd/beta
boards:
  a:
    packages: [./guards/alpha]
    target: alpha
    gating: true
  b:
    packages: [example.com/adopter/guards/beta/...]
    target: beta
    gating: true
`,
		"cmd/alpha/main.go":      program("alpha"),
		"cmd/beta/main.go":       program("beta"),
		"guards/alpha/a_test.go": guard("alpha"),
		"guards/beta/b_test.go":  guard("beta"),
		// The program's own flags reach it; env: expanded in the section.
		"guards/alpha/testdata/alpha.txtar": `target --daemonize yes -p 7
stdout '^alpha --daemonize yes -p 7$'
target env ALPHA_DATA
stdout '^'$CACHE'/alpha$'
target env ALPHA_FROM
stdout '^outer-via-'$HOME'$'
`,
		"guards/beta/skip_test.go": `package beta

import (
	"testing"

	"github.com/reproboard/reproboard/harness/outcome"
)

func TestAAOnlyOnPlan9(t *testing.T) {
	t.Skip("needs plan9")
	outcome.Select(t)
}
`,
		"guards/beta/testdata/beta.txtar": `target --port 6380
stdout '^beta --port 6380$'
`,
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	return dir
}

// goIn runs go in dir with a clean reproboard environment.
func goIn(t *testing.T, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REPROBOARD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("go %s in %s gave up after 5m; output so far:\n%s", strings.Join(args, " "), dir, out)
	}
	return string(out), err
}

// A module outside this one: plain go test runs each package against the
// target of the board that lists it, says which binary ran, and an
// explicit target (the variable, or reproboard run --target) overrides
// it, said as a mismatch.
func TestAdopterModuleTargetsPerPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own")
	}
	offlineGo(t)
	t.Setenv("GOFLAGS", "-mod=mod")
	t.Setenv("ADOPTER_OUTER", "outer")
	dir := adopterModule(t)

	t.Run("plain go test", func(t *testing.T) {
		out, err := goIn(t, dir, nil, "test", "-count=1", "-v", "./...")
		require.NoError(t, err, out)
		assert.Contains(t, out, "--- PASS: TestGuards/alpha")
		assert.Contains(t, out, "--- PASS: TestGuards/beta")
		assert.Regexp(t, `reproboard: target alpha: \S+/alpha \(sha256:[0-9a-f]{12}\) — board a lists package ./guards/alpha`, out)
		assert.Regexp(t, `reproboard: target beta: \S+/beta \(sha256:[0-9a-f]{12}\) — board b lists package ./guards/beta`, out)
	})

	t.Run("REPROBOARD_TARGET overrides, said", func(t *testing.T) {
		out, err := goIn(t, dir, []string{"REPROBOARD_TARGET=alpha"}, "test", "-count=1", "./guards/beta")
		require.Error(t, err, out)
		assert.Contains(t, out, "> stdout '^beta --port 6380$'")
		assert.Contains(t, out, "alpha --port 6380")
		assert.Contains(t, out, "REPROBOARD_TARGET=alpha overrides beta, the target of board b, which lists package ./guards/beta")
	})

	t.Run("list", func(t *testing.T) {
		code, stdout, stderr := invoke(t, "list", "--config", filepath.Join(dir, "boards.yaml"))
		require.Equal(t, 0, code, stderr)
		assert.Regexp(t, `(?m)^board b \(gating, target beta\): example\.com/adopter/guards/beta/\.\.\.\n  TestAAOnlyOnPlan9\s+example\.com/adopter/guards/beta\s+skipped, not counted: needs plan9\n  TestGuards/beta\s+example\.com/adopter/guards/beta\n`, stdout, "sorted, and the skip is marked")
	})

	t.Run("run --target", func(t *testing.T) {
		out := t.TempDir()
		code, stdout, stderr := invoke(t, "run", "--config", filepath.Join(dir, "boards.yaml"), "--out", out, "--target", "alpha", "b")
		assert.Equal(t, 1, code, "beta's guard against alpha is RED\n%s\n%s", stdout, stderr)
		assert.Contains(t, stderr, "board b: target alpha (--target) instead of the board's own beta")
		assert.Regexp(t, `target alpha: \S+/bin/alpha \(sha256:[0-9a-f]{12}\)`, stderr)
		assert.Contains(t, stdout, "board b (gating, target alpha,")
		assert.Contains(t, stdout, "alpha --port 6380")

		code, stdout, stderr = invoke(t, "run", "--config", filepath.Join(dir, "boards.yaml"), "--out", out, "--target", "gamma", "b")
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, "--target gamma: "+filepath.Join(dir, "boards.yaml")+" has no such target; targets: alpha, beta", stdout)

		code, stdout, stderr = invoke(t, "run", "--config", filepath.Join(dir, "boards.yaml"), "--out", out)
		assert.Equal(t, 0, code, "both boards against their own targets\n%s\n%s", stdout, stderr)
	})
}
