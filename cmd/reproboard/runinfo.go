package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/reproboard/reproboard/harness/board"
)

const gitLimit = 10 * time.Second

// source is the commit and branch of a run, and the Go that ran it: from
// the CI's variables when it sets them, else from git in the module's
// directory. Found once per invocation.
type source struct {
	commit, branch, url, goVersion string
}

func findSource(ctx context.Context, dir string) source {
	var s source
	s.commit = os.Getenv("GITHUB_SHA")
	s.branch = os.Getenv("GITHUB_REF_NAME")
	if s.commit == "" {
		s.commit = gitOutput(ctx, dir, "rev-parse", "HEAD")
	}
	if s.branch == "" {
		if b := gitOutput(ctx, dir, "rev-parse", "--abbrev-ref", "HEAD"); b != "HEAD" {
			s.branch = b
		}
	}
	if srv, repo := os.Getenv("GITHUB_SERVER_URL"), os.Getenv("GITHUB_REPOSITORY"); srv != "" && repo != "" && s.commit != "" {
		s.url = strings.TrimSuffix(srv, "/") + "/" + repo + "/commit/" + s.commit
	}
	if out, _, err := runGo(ctx, gitLimit, dir, os.Environ(), "env", "GOVERSION"); err == nil {
		s.goVersion = strings.TrimSpace(out)
	}
	return s
}

// gitOutput is git's answer, or "" when dir is not a checkout or git is
// missing: a run outside a checkout is recorded without a commit.
func gitOutput(ctx context.Context, dir string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, gitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// runInfo is the run object of a board that started at start and ran
// against the binary bin ("" when it has none).
func (s source) runInfo(start time.Time, bin string) *board.RunInfo {
	return &board.RunInfo{
		Time: start.UTC(), Duration: float64(time.Since(start).Milliseconds()) / 1000,
		Commit: s.commit, Branch: s.branch, CommitURL: s.url,
		GoVersion: s.goVersion, Reproboard: runtime.Version(), TargetHash: fileHash(bin),
	}
}

// fileHash is the sha256 of a binary, which tells two builds apart even
// when their Go build ids are not at hand.
func fileHash(path string) string {
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
