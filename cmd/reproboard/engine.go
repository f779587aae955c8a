package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/config"
	"github.com/reproboard/reproboard/harness/excerpt"
	"github.com/reproboard/reproboard/harness/outcome"
	"github.com/reproboard/reproboard/harness/target"
)

// session is one invocation's view of a boards.yaml: go commands run in
// its directory (the module of the boards), outputs go to out.
type session struct {
	c        *cli
	cfg      *config.Config
	cfgAbs   string
	dir      string
	out      string
	timeout  time.Duration
	deadline time.Duration
	binaries map[string]string // target -> built or found binary
	// target, when set (--target, REPROBOARD_TARGET), replaces every
	// board's own target.
	target string
	failed map[string]error // target -> why it has no binary: build once, fail once
}

func (c *cli) openSession(configPath, out string) (*session, error) {
	cfg, err := config.Load(configPath)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(configPath)
	if err != nil {
		return nil, err
	}
	outAbs, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	return &session{c: c, cfg: cfg, cfgAbs: abs, dir: filepath.Dir(abs), out: outAbs,
		timeout: 30 * time.Minute, deadline: 2 * time.Hour, binaries: map[string]string{}, failed: map[string]error{}}, nil
}

// boards resolves board names (all boards when none are given).
func (s *session) boards(names []string) ([]*config.BoardSpec, error) {
	if len(names) == 0 {
		return s.cfg.Boards, nil
	}
	var specs []*config.BoardSpec
	for _, n := range names {
		b := s.cfg.Board(n)
		if b == nil {
			return nil, fmt.Errorf("no board %q in %s; boards: %s", n, s.cfg.Path, strings.Join(s.cfg.BoardNames(), ", "))
		}
		specs = append(specs, b)
	}
	return specs, nil
}

// The variables the board sets for the tests. Inherited values are
// dropped so that a shell's leftover REPROBOARD_SHARD cannot skew a run.
const (
	envConfig       = "REPROBOARD_CONFIG"        // absolute path of boards.yaml
	envBoard        = "REPROBOARD_BOARD"         // the board being run
	envTarget       = "REPROBOARD_TARGET"        // the board's target name
	envTargetBinary = "REPROBOARD_TARGET_BINARY" // absolute path of its binary: do not build again
	envDryRun       = outcome.EnvDryRun
	envShard        = outcome.EnvShard
)

// baseEnv is the environment of go commands; spec is nil for a dry run
// over several boards.
func (s *session) baseEnv(spec *config.BoardSpec) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case envConfig, envBoard, envTarget, envTargetBinary, envDryRun, envShard:
			continue
		}
		env = append(env, kv)
	}
	env = append(env, envConfig+"="+s.cfgAbs)
	if spec != nil {
		env = append(env, envBoard+"="+spec.Name, envTarget+"="+s.targetOf(spec))
	}
	return env
}

// targetOf is the target a board runs against: --target when given.
func (s *session) targetOf(spec *config.BoardSpec) string {
	if s.target != "" {
		return s.target
	}
	return spec.Target
}

// targetEnv is baseEnv plus the target's binary. The target's env: is
// applied by each section, which expands its variables.
func (s *session) targetEnv(ctx context.Context, spec *config.BoardSpec) ([]string, error) {
	t := s.cfg.Target(s.targetOf(spec))
	bin, err := s.binary(ctx, t)
	if err != nil {
		return nil, err
	}
	return append(s.baseEnv(spec), envTargetBinary+"="+bin), nil
}

// binary builds the target once per invocation, or finds its binary.
func (s *session) binary(ctx context.Context, t *config.Target) (string, error) {
	if bin, ok := s.binaries[t.Name]; ok {
		return bin, nil
	}
	if err, ok := s.failed[t.Name]; ok {
		return "", err
	}
	bin, err := s.findBinary(ctx, t)
	if err != nil {
		s.failed[t.Name] = err
		return "", err
	}
	s.binaries[t.Name] = bin
	fmt.Fprintf(s.c.stderr, "target %s: %s (%s)\n", t.Name, bin, target.Hash(bin))
	return bin, nil
}

func (s *session) findBinary(ctx context.Context, t *config.Target) (string, error) {
	var bin string
	switch {
	case t.Build != "":
		bin = filepath.Join(s.out, "bin", t.Name)
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			return "", err
		}
		fmt.Fprintf(s.c.stderr, "building target %s (%s)\n", t.Name, t.Build)
		if _, tail, err := runGo(ctx, buildLimit, s.dir, os.Environ(), "build", "-o", bin, t.Build); err != nil {
			cause := firstErrorLine(tail)
			if cause == "" {
				cause = err.Error()
			}
			return "", fmt.Errorf("target %s did not build: %s\n%s", t.Name, cause, strings.TrimSpace(excerpt.Excerpt(tail, 0)))
		}
	case t.Binary != "" && !strings.Contains(t.Binary, "/"):
		p, err := exec.LookPath(t.Binary)
		if err != nil {
			return "", fmt.Errorf("target %s: %s is not installed: no %s in $PATH; install it, or give binary: a path (%s)", t.Name, t.Binary, t.Binary, t.Pos)
		}
		bin = p
	case t.Binary != "":
		bin = t.Binary
		if !filepath.IsAbs(bin) {
			bin = filepath.Join(s.dir, bin)
		}
	default:
		bin = os.Getenv(t.BinaryEnv)
		if bin == "" {
			return "", fmt.Errorf("target %s: $%s is not set; set it to the path of the target's binary (%s)", t.Name, t.BinaryEnv, t.Pos)
		}
		abs, err := filepath.Abs(bin)
		if err != nil {
			return "", err
		}
		bin = abs
	}
	fi, err := os.Stat(bin)
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("target %s: %s is not an executable file (%s)", t.Name, bin, t.Pos)
	}
	return bin, nil
}

// listBoards lists the sections of specs with one dry run over all their
// packages (every section is created and skipped, so go test names them
// all without running any), then splits the listing by board: one go test
// links each test binary once, however many boards share a package.
func (s *session) listBoards(ctx context.Context, specs []*config.BoardSpec) (map[string]*board.Results, error) {
	env := append(s.baseEnv(nil), envDryRun+"=1")
	pkgsOf := map[string]map[string]bool{}
	var patterns []string
	for _, spec := range specs {
		out, tail, err := runGo(ctx, listLimit, s.dir, env, append([]string{"list", "-e", "-f", "{{.ImportPath}}"}, spec.Packages...)...)
		if err != nil {
			return nil, fmt.Errorf("board %s (%s): cannot list its packages: %v: %s", spec.Name, spec.Pos, err, firstErrorLine(tail))
		}
		pkgsOf[spec.Name] = map[string]bool{}
		for _, p := range strings.Fields(out) {
			pkgsOf[spec.Name][p] = true
		}
		for _, p := range spec.Packages {
			if !slices.Contains(patterns, p) {
				patterns = append(patterns, p)
			}
		}
	}
	g := goTest{dir: s.dir, env: env, args: append([]string{"-count=1"}, patterns...), deadline: listLimit}
	all, err := g.run(ctx)
	if err != nil {
		return nil, err
	}
	listings := map[string]*board.Results{}
	for _, spec := range specs {
		mine := pkgsOf[spec.Name]
		res := &board.Results{}
		for _, sr := range all.Sections {
			if mine[sr.Package] {
				res.Sections = append(res.Sections, sr)
			}
		}
		for _, p := range all.Problems {
			if p.Package == "" || mine[p.Package] {
				res.Problems = append(res.Problems, p)
			}
		}
		if len(mine) == 0 {
			res.Problems = append(res.Problems, board.Problem{Kind: board.ProblemGoTest,
				Message: fmt.Sprintf("the packages of board %s (%s) match no Go package (%s)", spec.Name, strings.Join(spec.Packages, " "), spec.Pos)})
		}
		listings[spec.Name] = res
	}
	return listings, nil
}

// listAll lists every board and checks the known_red entries against all
// of them (an entry may belong to any board). When a board could not be
// listed (a package that does not build, no package at all), the check
// cannot be trusted and only warns.
func (s *session) listAll(ctx context.Context) (map[string]*board.Results, error) {
	listings, err := s.listBoards(ctx, s.cfg.Boards)
	if err != nil {
		return nil, err
	}
	var names, broken []string
	for _, spec := range s.cfg.Boards {
		names = append(names, listings[spec.Name].Names()...)
		for _, p := range listings[spec.Name].Problems {
			broken = append(broken, fmt.Sprintf("board %s: %s", spec.Name, p.Message))
		}
	}
	if err := s.cfg.CheckTests(names); err != nil {
		if len(broken) == 0 {
			return listings, err
		}
		fmt.Fprintf(s.c.stderr, "warning: the known_red entries cannot all be checked, because the dry run failed:\n  %s\n  %s\n",
			strings.Join(broken, "\n  "), strings.ReplaceAll(err.Error(), "\n", "\n  "))
	}
	return listings, nil
}

// runSpec says how to run one board.
type runSpec struct {
	spec     *config.BoardSpec
	shard    string   // "k/n" or ""
	runRE    string   // go test -run, or ""
	selected []string // when set, only these sections (and their subtests) count
	expected []string // sections the dry run listed for this run
	strict   bool
	stem     string // file name stem in out: board[.shardKofN]
	run      *board.RunKey
}

// runBoard runs one board and classifies it. Problems that stop the board
// from running at all (its target did not build) become the board's own
// problem, so the reports show them like any other.
func (s *session) runBoard(ctx context.Context, r runSpec) (*board.Board, error) {
	opts := board.Options{Board: r.spec.Name, Target: s.targetOf(r.spec), Gating: r.spec.Gating, Strict: r.strict,
		Platform: config.Platform(), Shard: r.shard, Expected: r.expected, Run: r.run}
	env, err := s.targetEnv(ctx, r.spec)
	switch {
	case err == nil:
	case s.cfg.Target(s.targetOf(r.spec)).Build == "":
		// A program that is not installed (or a variable not set): the
		// sections still run, each one SETUP-FAIL saying why, as they do
		// under plain go test.
		env = s.baseEnv(r.spec)
	default: // the caller has said why; the board's reports say it again
		return board.Classify(&board.Results{Problems: []board.Problem{{Kind: board.ProblemBuild, Message: firstLine(err.Error()), Excerpt: excerpt.Excerpt(err.Error(), 0)}}}, s.cfg.KnownRed, opts), nil
	}
	if r.shard != "" {
		env = append(env, envShard+"="+r.shard)
	}
	artifacts := filepath.Join(s.out, "artifacts", r.stem)
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		return nil, err
	}
	args := []string{"-count=1", "-timeout", s.timeout.String(), "-artifacts", "-outputdir", artifacts}
	if r.runRE != "" {
		args = append(args, "-run", r.runRE)
	}
	events := filepath.Join(s.out, r.stem+".events.jsonl")
	prog := newProgress(s.c.stderr, len(r.expected))
	fmt.Fprintf(s.c.stderr, "running board %s (%s)%s: %d section(s)\n", r.spec.Name, strings.Join(r.spec.Packages, " "), shardText(r.shard), len(r.expected))
	g := goTest{dir: s.dir, env: env, args: append(args, r.spec.Packages...), events: events, deadline: s.deadline,
		onStart: prog.started,
		onEnd: func(sr *board.SectionResult) {
			if sr.Executed() && s.wanted(r, sr.Test) {
				prog.finished(board.ClassifySection(*sr, s.cfg.KnownRed, opts.Platform))
			}
		}}
	res, err := g.run(ctx)
	prog.clear()
	if err != nil {
		return nil, err
	}
	if r.selected != nil {
		var keep []board.SectionResult
		for _, sr := range res.Sections {
			if s.wanted(r, sr.Test) {
				keep = append(keep, sr)
			}
		}
		res.Sections = keep
	}
	s.resolveArtifacts(ctx, env, r.spec, res)
	b := board.Classify(res, s.cfg.KnownRed, opts)
	b.Events = events
	return b, nil
}

// rerunFails re-runs each RED or INCONCLUSIVE section of b alone, one at
// a time after the board's parallel run, up to n times until it stops
// failing (go test -run anchored to the section, in its package), and
// folds the attempts into the section: passing on a re-run is FLAKY. A
// parent reported as a section is not re-run: its pattern would run every
// subtest again.
func (s *session) rerunFails(ctx context.Context, r runSpec, b *board.Board, n int) {
	if n <= 0 {
		return
	}
	changed := false
	for i, sec := range b.Sections {
		if !board.NeedsRerun(sec) || hasSubsections(b, sec.Test) {
			continue
		}
		var reruns []board.Section
		for k := 1; k <= n; k++ {
			spec := *r.spec
			spec.Packages = []string{sec.Package}
			fmt.Fprintf(s.c.stderr, "re-running %s %s alone (%d of %d): it was %s\n", sec.Package, sec.Test, k, n, sec.Outcome)
			rb, err := s.runBoard(ctx, runSpec{spec: &spec, runRE: runRegexp([]string{sec.Test}), selected: []string{sec.Test},
				expected: []string{sec.Test}, strict: r.strict, stem: fmt.Sprintf("%s.rerun%d-%d", r.stem, i+1, k)})
			got := board.Section{Package: sec.Package, Test: sec.Test, Outcome: outcome.Red, Reason: "the re-run did not run the section"}
			if err != nil {
				got.Reason = "the re-run could not run: " + firstLine(err.Error())
			} else {
				for _, x := range rb.Sections {
					if x.Test == sec.Test {
						got = x
					}
				}
			}
			reruns = append(reruns, got)
			if !board.NeedsRerun(got) {
				break
			}
		}
		b.Sections[i] = board.Rerun(sec, reruns)
		changed = true
	}
	if changed {
		b.Score()
	}
}

func hasSubsections(b *board.Board, test string) bool {
	for _, s := range b.Sections {
		if strings.HasPrefix(s.Test, test+"/") {
			return true
		}
	}
	return false
}

func (s *session) wanted(r runSpec, test string) bool {
	if r.selected == nil {
		return true
	}
	for _, want := range r.selected {
		if test == want || strings.HasPrefix(test, want+"/") {
			return true
		}
	}
	return false
}

// resolveArtifacts makes relative artefact paths absolute: a test runs in
// its package's directory, so that is what they are relative to.
func (s *session) resolveArtifacts(ctx context.Context, env []string, spec *config.BoardSpec, res *board.Results) {
	var dirs map[string]string
	for _, sr := range res.Sections {
		for k, v := range sr.Attrs {
			if !strings.HasPrefix(k, outcome.AttrArtifactPrefix) || v == "" || filepath.IsAbs(v) {
				continue
			}
			if dirs == nil {
				var err error
				if dirs, err = packageDirs(ctx, s.dir, env, spec.Packages); err != nil {
					fmt.Fprintf(s.c.stderr, "warning: relative artefact paths stay unresolved: %v\n", err)
					return
				}
			}
			if d := dirs[sr.Package]; d != "" {
				sr.Attrs[k] = filepath.Join(d, v)
			}
		}
	}
}

// runRegexp builds a go test -run pattern selecting exactly these tests'
// paths level by level. Levels combine as a cross product, so it may
// select more; the caller keeps only the wanted sections.
func runRegexp(tests []string) string {
	var levels [][]string
	for _, t := range tests {
		for i, part := range strings.Split(t, "/") {
			if i == len(levels) {
				levels = append(levels, nil)
			}
			q := regexp.QuoteMeta(part)
			if !slices.Contains(levels[i], q) {
				levels[i] = append(levels[i], q)
			}
		}
	}
	var parts []string
	for _, l := range levels {
		parts = append(parts, "^("+strings.Join(l, "|")+")$")
	}
	return strings.Join(parts, "/")
}

func shardText(shard string) string {
	if shard == "" {
		return ""
	}
	return " shard " + shard
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSuffix(strings.TrimSpace(line), ":")
}

// inShard keeps the listed sections this shard runs.
func inShard(names []string, shard string) []string {
	if shard == "" {
		return names
	}
	k, n, err := outcome.ParseShard(shard)
	if err != nil {
		return names
	}
	var out []string
	for _, name := range names {
		if outcome.InShard(name, k, n) {
			out = append(out, name)
		}
	}
	return out
}
