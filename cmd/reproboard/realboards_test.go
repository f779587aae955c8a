package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/outcome"
)

// junitSeen is what a JUnit consumer from a package registry
// (python3-junitparser, through scripts/junit-check.py) read in a file.
type junitSeen struct {
	Totals struct{ Tests, Failures, Errors, Skipped int }
	Cases  []struct {
		Name, Result, Message string
		Properties            map[string]string
	}
}

// readJUnit reads path with junitparser; it skips t, saying why, where no
// python3 has it installed (.ci/run installs it).
func readJUnit(t *testing.T, path string) junitSeen {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "junit-check.py"))
	require.NoError(t, err)
	var tried []string
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		bin, err := exec.LookPath(py)
		if err != nil {
			tried = append(tried, py+": not found")
			continue
		}
		out, err := exec.Command(bin, script, path).Output()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 {
			tried = append(tried, bin+": no junitparser")
			continue
		}
		require.NoError(t, err, "junitparser could not read %s: %s", path, exitStderr(err))
		var seen junitSeen
		require.NoError(t, json.Unmarshal(out, &seen))
		return seen
	}
	t.Skipf("no JUnit consumer to check with (%s): apt-get install python3-junitparser", strings.Join(tried, "; "))
	return junitSeen{}
}

func exitStderr(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(exit.Stderr)
	}
	return ""
}

// The repository's own boards, as make board runs them, then as two
// shards one after the other and merged: the merged boards equal the
// unsharded ones section for section, each shard's reports show only its
// own sections, and a JUnit consumer reads the same verdicts as the board.
// Every run re-runs a failed section twice (--rerun-fails 2): a guard with
// a tight internal deadline may fail once on a loaded shared machine, and
// this test is about sharding, so a section that passed on a re-run
// (FLAKY) counts as passed here.
func TestRealBoardsShardedEqualUnsharded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs both real boards three times")
	}
	t.Setenv("NO_COLOR", "1")
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	code, stdout, stderr := invoke(t, "run", "--config", "../../boards.yaml", "--rerun-fails", "2", "--out", out,
		"--json", filepath.Join(out, "board.json"), "--junit", filepath.Join(out, "junit.xml"))
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Regexp(t, `KNOWN-RED\s+#581\s+\S+\s+TestRepro/issue581`, stdout)
	whole := map[string]*board.Board{}
	for _, name := range []string{"guards", "bug-repro"} {
		whole[name] = readBoard(t, filepath.Join(out, "board."+name+".json"))
		require.NotEmpty(t, whole[name].Sections, name)
	}

	t.Run("JUnit read by junitparser agrees with the board", func(t *testing.T) {
		repro := readJUnit(t, filepath.Join(out, "junit.bug-repro.xml"))
		assert.Equal(t, 0, repro.Totals.Failures, "a known red is not a failure")
		assert.Equal(t, 0, repro.Totals.Errors)
		assert.Equal(t, 1, repro.Totals.Skipped)
		assert.Equal(t, len(whole["bug-repro"].Sections), repro.Totals.Tests, "one testcase per section")
		for _, c := range repro.Cases {
			if c.Result == "skipped" {
				assert.Equal(t, "TestRepro/issue581", c.Name)
				assert.Contains(t, c.Message, "KNOWN-RED #581: query-path memory growth")
				assert.Equal(t, "KNOWN-RED", c.Properties["reproboard.outcome"])
				assert.Equal(t, "#581", c.Properties["reproboard.issue"])
				for k, v := range c.Properties {
					if strings.HasPrefix(k, outcome.AttrArtifactPrefix) {
						assert.False(t, filepath.IsAbs(v), "%s=%s is relative to the report", k, v)
						assert.FileExists(t, filepath.Join(out, v))
					}
				}
			}
		}
		guards := readJUnit(t, filepath.Join(out, "junit.guards.xml"))
		assert.Equal(t, len(whole["guards"].Sections), guards.Totals.Tests)
		assert.Zero(t, guards.Totals.Failures+guards.Totals.Errors+guards.Totals.Skipped)
		for _, c := range guards.Cases {
			assert.Contains(t, []string{"GREEN", "FLAKY"}, c.Properties["reproboard.outcome"], c.Name)
		}
	})

	var parts []string
	for _, k := range []string{"1", "2"} {
		sout := filepath.Join(dir, "shard"+k)
		code, stdout, stderr := invoke(t, "run", "--config", "../../boards.yaml", "--rerun-fails", "2", "--out", sout, "--shard", k+"/2")
		require.Equal(t, 0, code, "shard %s/2: stdout:\n%s\nstderr:\n%s", k, stdout, stderr)
		assert.NotContains(t, stdout, "belongs to another shard", "the other shard's sections appear nowhere")
		for _, name := range []string{"guards", "bug-repro"} {
			p := filepath.Join(sout, name+".shard"+k+"of2.json")
			b := readBoard(t, p)
			for _, s := range b.Skipped {
				assert.NotContains(t, s.Reason, "reproboard shard", "%s: %s", name, s.Test)
			}
			parts = append(parts, p)
		}
	}
	mout := filepath.Join(dir, "merged")
	code, stdout, stderr = invoke(t, append([]string{"merge", "--out", mout, "--json", filepath.Join(mout, "board.json")}, parts...)...)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	for _, name := range []string{"guards", "bug-repro"} {
		m := readBoard(t, filepath.Join(mout, "board."+name+".json"))
		assert.Equal(t, passed(outcomes(whole[name])), passed(outcomes(m)), "board %s: merged shards equal the unsharded run", name)
		assert.Equal(t, whole[name].Skipped, m.Skipped, name)
		assert.Equal(t, whole[name].ExitCode, m.ExitCode, name)
	}
}

// passed maps FLAKY (passed on a re-run) to GREEN: see the test above.
func passed(outcomes map[string]string) map[string]string {
	for k, o := range outcomes {
		if o == string(outcome.Flaky) {
			outcomes[k] = string(outcome.Green)
		}
	}
	return outcomes
}
