// Command mutants measures how much of demod's contract the guard suite
// really guards: it applies each mutant of testdata/mutants/demod.yaml (a
// small mistake a developer could make, written from the contract) to a
// temporary copy of demod, builds it, runs the guard suite against it, and
// prints the score and the survivors. A survivor must be killed by demod's
// unit tests or carry an out_of_reach reason; otherwise the run fails.
//
//	go run ./cmd/mutants [-list FILE] [-run REGEXP] [-parallel N] [-json FILE]
//
// `make mutants` runs it. It is slow (a suite run per mutant), so it is not
// part of `make test`; TestGuardsCatchBreaks is the fast form.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/goccy/go-yaml"
)

// Mutant is one entry of the list.
type Mutant struct {
	Name string `yaml:"name"`
	// Contract is the line of the contract (or of demod's README) the
	// mistake breaks.
	Contract string `yaml:"contract"`
	File     string `yaml:"file"` // relative to the repository root
	Old      string `yaml:"old"`  // must occur exactly once in File
	New      string `yaml:"new"`
	// OutOfReach says why the guards cannot see this mistake; only then
	// may it survive them.
	OutOfReach string `yaml:"out_of_reach"`
}

// Result is what happened to one mutant.
type Result struct {
	Name       string             `json:"name"`
	Contract   string             `json:"contract"`
	Killed     bool               `json:"killed_by_guards"`
	UnitKilled bool               `json:"killed_by_unit_tests,omitempty"`
	OutOfReach string             `json:"out_of_reach,omitempty"`
	Failed     map[string]float64 `json:"failed_sections,omitempty"` // section -> seconds
	// FailedAfter is, per failed section, the failing command and how long
	// it ran before it failed (cause to RED).
	FailedAfter map[string]string `json:"failed_after,omitempty"`
	Suite       float64           `json:"suite_seconds"`
	BuildError  string            `json:"build_error,omitempty"`
}

func main() {
	os.Exit(run())
}

func run() int {
	list := flag.String("list", "testdata/mutants/demod.yaml", "the mutant list")
	only := flag.String("run", "", "only the mutants whose name matches this regexp")
	parallel := flag.Int("parallel", 4, "guard sections run at once (go test -parallel)")
	jsonOut := flag.String("json", "out/mutants.json", "write the results here (empty: do not)")
	logDir := flag.String("logs", "out/mutants", "keep each mutant's suite output here (empty: do not)")
	unit := flag.Bool("unit", true, "run demod's unit tests against each survivor")
	flag.Parse()

	root, err := os.Getwd()
	if err != nil {
		return fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return fatal(fmt.Errorf("run from the repository root (no go.mod in %s)", root))
	}
	mutants, err := load(root, *list)
	if err != nil {
		return fatal(err)
	}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			return fatal(fmt.Errorf("-run: %v", err))
		}
		mutants = slices.DeleteFunc(mutants, func(m Mutant) bool { return !re.MatchString(m.Name) })
	}
	work, err := os.MkdirTemp("", "mutants-")
	if err != nil {
		return fatal(err)
	}
	defer os.RemoveAll(work)
	src := filepath.Join(work, "src")
	// demod's own tests run on reproboard's harness: copy it too.
	for _, p := range []string{"go.mod", "go.sum", "boards.yaml", "examples", "harness"} {
		if err := copyTree(filepath.Join(root, p), filepath.Join(src, p)); err != nil {
			return fatal(err)
		}
	}
	suite := filepath.Join(work, "guards.test")
	fmt.Printf("building the guard suite and demod as shipped (%d mutants from %s)\n", len(mutants), *list)
	if out, err := goCmd(root, 5*time.Minute, "test", "-c", "-o", suite, "./guards"); err != nil {
		return fatal(fmt.Errorf("go test -c ./guards: %v\n%s", err, out))
	}
	r := &runner{root: root, src: src, suite: suite, bin: filepath.Join(work, "demod"), parallel: *parallel, logs: *logDir}
	if r.logs != "" {
		if err := os.MkdirAll(r.logs, 0o755); err != nil {
			return fatal(err)
		}
	}
	base := r.one(Mutant{Name: "as-shipped"})
	if base.BuildError != "" || base.Killed {
		fmt.Printf("demod as shipped is not GREEN on the guards (failed: %v) %s: fix that first\n", keys(base.Failed), base.BuildError)
		return 2
	}
	fmt.Printf("as shipped: GREEN in %.1fs\n", base.Suite)
	if *unit {
		if r.unit(Mutant{}) {
			fmt.Println("demod's unit tests fail on demod as shipped (in the copy): fix that first")
			return 2
		}
		fmt.Println("as shipped: demod's unit tests pass")
	}

	var results []Result
	for i, m := range mutants {
		res := r.one(m)
		if !res.Killed && res.BuildError == "" && *unit {
			res.UnitKilled = r.unit(m)
		}
		results = append(results, res)
		fmt.Printf("[%d/%d] %s\n", i+1, len(mutants), line(res))
	}
	return report(results, *jsonOut, base.Suite)
}

func fatal(err error) int {
	fmt.Fprintln(os.Stderr, "mutants:", err)
	return 2
}

// load reads the list strictly and checks that each mutant applies.
func load(root, path string) ([]Mutant, error) {
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	var ms []Mutant
	if err := yaml.UnmarshalWithOptions(data, &ms, yaml.DisallowUnknownField()); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	seen := map[string]bool{}
	for i, m := range ms {
		where := fmt.Sprintf("%s: mutant %d (%s)", path, i+1, m.Name)
		switch {
		case m.Name == "" || m.Contract == "" || m.File == "" || m.Old == "":
			return nil, fmt.Errorf("%s: name, contract, file and old are required", where)
		case seen[m.Name]:
			return nil, fmt.Errorf("%s: duplicate name", where)
		case m.Old == m.New:
			return nil, fmt.Errorf("%s: old and new are the same", where)
		}
		seen[m.Name] = true
		body, err := os.ReadFile(filepath.Join(root, m.File))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		if n := bytes.Count(body, []byte(m.Old)); n != 1 {
			return nil, fmt.Errorf("%s: `old` occurs %d times in %s, want exactly once (the code changed: update the mutant)", where, n, m.File)
		}
	}
	return ms, nil
}

type runner struct {
	root, src, suite, bin string
	parallel              int
	logs                  string
}

var (
	failRE  = regexp.MustCompile(`(?m)^\s*--- FAIL: TestGuards/(\S+) \(([\d.]+)s\)`)
	afterRE = regexp.MustCompile(`(?m)^=== ATTR  TestGuards/(\S+) reproboard\.failed_after (.*) ([\d.]+)s$`)
)

// one applies m to the copy, builds it, runs the suite, and restores the copy.
func (r *runner) one(m Mutant) Result {
	res := Result{Name: m.Name, Contract: m.Contract, OutOfReach: m.OutOfReach}
	restore, err := r.apply(m)
	if err != nil {
		res.BuildError = err.Error()
		return res
	}
	defer restore()
	if out, err := goCmd(r.src, 5*time.Minute, "build", "-o", r.bin, "./examples/demod"); err != nil {
		res.BuildError = fmt.Sprintf("%v\n%s", err, out)
		return res
	}
	start := time.Now()
	cmd := exec.Command(r.suite, "-test.run", "^TestGuards$", "-test.v", "-test.count=1",
		"-test.parallel", fmt.Sprint(r.parallel), "-test.timeout", "4m")
	cmd.Dir = filepath.Join(r.root, "guards")
	cmd.Env = append(cleanEnv(), "REPROBOARD_TARGET_BINARY="+r.bin, "REPROBOARD_TARGET=demod")
	out, err := runBounded(cmd, 5*time.Minute)
	res.Suite = time.Since(start).Seconds()
	if r.logs != "" {
		_ = os.WriteFile(filepath.Join(r.logs, m.Name+".log"), []byte(out), 0o644)
	}
	res.Killed = err != nil
	res.Failed = map[string]float64{}
	for _, m := range failRE.FindAllStringSubmatch(out, -1) {
		if !strings.Contains(m[1], "/") {
			continue // a directory's subtest fails with its scripts
		}
		var s float64
		fmt.Sscan(m[2], &s)
		res.Failed[m[1]] = s
	}
	res.FailedAfter = map[string]string{}
	for _, m := range afterRE.FindAllStringSubmatch(out, -1) {
		res.FailedAfter[m[1]] = m[2] + " " + m[3] + "s"
	}
	return res
}

// unit runs demod's own tests against the mutated copy.
func (r *runner) unit(m Mutant) bool {
	restore, err := r.apply(m)
	if err != nil {
		return false
	}
	defer restore()
	_, err = goCmd(r.src, 5*time.Minute, "test", "-count=1", "./examples/demod/...")
	return err != nil
}

func (r *runner) apply(m Mutant) (func(), error) {
	if m.File == "" {
		return func() {}, nil
	}
	path := filepath.Join(r.src, m.File)
	orig, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	mutated := bytes.Replace(orig, []byte(m.Old), []byte(m.New), 1)
	if err := os.WriteFile(path, mutated, 0o644); err != nil {
		return nil, err
	}
	return func() { _ = os.WriteFile(path, orig, 0o644) }, nil
}

// cleanEnv drops the switches that would change what demod or the suite
// does; the breaks are TestGuardsCatchBreaks' business.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "DEMOD_") || strings.HasPrefix(k, "REPROBOARD_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func goCmd(dir string, d time.Duration, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	return runBounded(cmd, d)
}

// runBounded runs cmd in its own process group, killed with its children
// when d passes.
func runBounded(cmd *exec.Cmd, d time.Duration) (string, error) {
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return buf.String(), err
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return buf.String(), fmt.Errorf("%s gave no result within %s", filepath.Base(cmd.Path), d)
	}
}

func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

func keys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func line(r Result) string {
	switch {
	case r.BuildError != "":
		return fmt.Sprintf("BUILD-FAIL %s: %s", r.Name, firstLine(r.BuildError))
	case r.Killed:
		var parts []string
		for _, k := range keys(r.Failed) {
			parts = append(parts, fmt.Sprintf("%s %.1fs [%s]", k, r.Failed[k], r.FailedAfter[k]))
		}
		return fmt.Sprintf("KILLED     %s by %s (suite %.1fs)", r.Name, strings.Join(parts, ", "), r.Suite)
	case r.UnitKilled:
		return fmt.Sprintf("SURVIVED   %s (killed by demod's unit tests) — %s", r.Name, r.Contract)
	case r.OutOfReach != "":
		return fmt.Sprintf("SURVIVED   %s (out of the guards' reach: %s) — %s", r.Name, r.OutOfReach, r.Contract)
	}
	return fmt.Sprintf("SURVIVED   %s — %s", r.Name, r.Contract)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func report(results []Result, jsonOut string, base float64) int {
	n, killed, both := 0, 0, 0
	var survivors, unexplained []string
	for _, r := range results {
		if r.BuildError != "" {
			continue
		}
		n++
		switch {
		case r.Killed:
			killed++
			both++
		case r.UnitKilled:
			both++
			survivors = append(survivors, r.Name+" (unit tests kill it)")
		case r.OutOfReach != "":
			survivors = append(survivors, r.Name+" (out of reach: "+r.OutOfReach+")")
		default:
			survivors = append(survivors, r.Name)
			unexplained = append(unexplained, r.Name)
		}
	}
	builds := len(results) - n
	pct := func(k int) float64 {
		if n == 0 {
			return 0
		}
		return 100 * float64(k) / float64(n)
	}
	fmt.Printf("\nmutants: %d built (%d did not build)\n", n, builds)
	fmt.Printf("guards alone:            %d/%d killed (%.0f%%)\n", killed, n, pct(killed))
	fmt.Printf("guards + demod's tests:  %d/%d killed (%.0f%%)\n", both, n, pct(both))
	fmt.Printf("suite as shipped: %.1fs\n", base)
	if len(survivors) > 0 {
		fmt.Printf("survivors of the guards:\n  %s\n", strings.Join(survivors, "\n  "))
	}
	if jsonOut != "" {
		if err := os.MkdirAll(filepath.Dir(jsonOut), 0o755); err == nil {
			data, _ := json.MarshalIndent(results, "", "  ")
			_ = os.WriteFile(jsonOut, data, 0o644)
		}
	}
	var errs []error
	if builds > 0 {
		errs = append(errs, fmt.Errorf("%d mutant(s) did not build: fix their old/new", builds))
	}
	if len(unexplained) > 0 {
		errs = append(errs, fmt.Errorf("survivors neither killed by demod's unit tests nor marked out_of_reach: %s", strings.Join(unexplained, ", ")))
	}
	if pct(killed) < 90 {
		fmt.Printf("below the 90%% goal for the guards alone\n")
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Println("FAIL:", err)
		return 1
	}
	return 0
}
