package config

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Config is a validated boards.yaml. Targets, boards and entries keep the
// order of the file, so every report lists them the way the file does.
type Config struct {
	Path     string // as given to Load; errors name it
	Digest   string // "sha256:…" of the file's bytes: which boards.yaml a run read
	Targets  []*Target
	Boards   []*BoardSpec
	KnownRed []*KnownRed
	// History is the run history database (history:), relative to
	// boards.yaml; "" for the default under the output directory.
	History     string
	HistoryKeep HistoryKeep
}

// HistoryKeep is history_keep: how many runs of each board the history
// keeps (runs), and for how long (age); zero does not limit.
type HistoryKeep struct {
	Runs int
	Age  time.Duration
}

// Pos is a place in boards.yaml; it prints as "file:line:col".
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col) }

// Target says how to get a program under test and where it keeps state.
type Target struct {
	Name string
	// Exactly one of Binary (a path, relative to boards.yaml), BinaryEnv (the
	// variable holding the path) and Build (a Go package to build) is set.
	Binary, BinaryEnv, Build string
	CacheVar, RuntimeVar     string // the target's own env var names
	Log                      string // its log file, relative to the cache dir
	// Env is set for every process of a section; a value's $VAR or ${VAR}
	// expands from the section's variables ($SECTION, $CACHE, $RUNTIME,
	// $HOME, $TMPDIR, ...) and the variables EnvPass names.
	Env map[string]string
	// EnvPass names variables of the outer environment that scripts see
	// as script variables and Env values may expand.
	EnvPass []string
	// Features are what this target's build has (e.g. ui); a script pins a
	// feature behind [feature:NAME] and is skipped, not RED, without it.
	Features []string
	Pos      Pos
}

// BoardSpec is one board of boards.yaml (BoardSpec, not Board: a Board is
// the classified result of running one).
type BoardSpec struct {
	Name        string
	Packages    []string
	Target      string
	Gating      bool
	Description string
	// RerunFails re-runs each RED or INCONCLUSIVE section alone up to this
	// many times after the board's run; one that passes is FLAKY.
	RerunFails int
	Pos        Pos
}

// MaxRerunFails bounds rerun_fails and --rerun-fails: a section that
// needs more re-runs than this to pass is not flaky, it is broken.
const MaxRerunFails = 10

// KnownRed whitelists one failing section: it stays KNOWN-RED only while
// it fails the way Signature says.
type KnownRed struct {
	Test      string // full Go test name, subtests included
	Issue     int
	Reason    string
	Signature *regexp.Regexp
	Platforms []string // GOOS or GOOS/GOARCH; empty means every platform
	Pos       Pos
}

// AppliesTo reports whether the entry holds on platform ("GOOS/GOARCH").
func (k *KnownRed) AppliesTo(platform string) bool {
	if len(k.Platforms) == 0 {
		return true
	}
	goos, _, _ := strings.Cut(platform, "/")
	for _, p := range k.Platforms {
		if p == platform || p == goos {
			return true
		}
	}
	return false
}

// Platform is the running program's platform in the form entries use.
func Platform() string { return runtime.GOOS + "/" + runtime.GOARCH }

// Target returns the named target, or nil.
func (c *Config) Target(name string) *Target {
	for _, t := range c.Targets {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Board returns the named board, or nil.
func (c *Config) Board(name string) *BoardSpec {
	for _, b := range c.Boards {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// BoardNames lists the boards in file order, for usage messages.
func (c *Config) BoardNames() []string {
	var names []string
	for _, b := range c.Boards {
		names = append(names, b.Name)
	}
	return names
}

// CheckTests reports every known_red entry whose test is not among
// existing (the full names of the sections a dry run listed). A listing
// that shows only an ancestor of the entry means the parent skipped before
// creating its subtests; the message says so, because that is the fix.
func (c *Config) CheckTests(existing []string) error {
	set := make(map[string]bool, len(existing))
	for _, name := range existing {
		set[name] = true
	}
	var errs []error
	for _, k := range c.KnownRed {
		if set[k.Test] {
			continue
		}
		msg := fmt.Sprintf("%s: known_red entry names test %s, which no board package defines; fix the name (as go test -json prints it) or drop the entry", k.Pos, k.Test)
		for anc := k.Test; strings.Contains(anc, "/"); {
			anc = anc[:strings.LastIndex(anc, "/")]
			if set[anc] {
				msg += fmt.Sprintf(" (the dry run listed %s as a section: it skipped before creating subtests; call outcome.Select in the subtests, not in the parent)", anc)
				break
			}
		}
		errs = append(errs, errors.New(msg))
	}
	return errors.Join(errs...)
}

// Load reads and strictly validates a boards.yaml. It reports every
// problem at once, each as "file:line:col: what is wrong; what to do",
// sorted by position.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read the board config: %w", path, err)
	}
	return Parse(path, data)
}

// Parse validates the text of a boards.yaml; path is used in messages only.
func Parse(path string, data []byte) (*Config, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // an editor's BOM is not a key
	if err := prescan(path, data); err != nil {
		return nil, err
	}
	// Duplicate keys are allowed by the parser so that checkMapping can
	// report them together with every other problem, not as the only one.
	f, err := parser.ParseBytes(data, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		var se *yaml.SyntaxError
		if errors.As(err, &se) && se.Token != nil {
			return nil, fmt.Errorf("%s:%d:%d: not valid YAML: %s", path, se.Token.Position.Line, se.Token.Position.Column, se.Message)
		}
		return nil, fmt.Errorf("%s: not valid YAML: %v", path, err)
	}
	v := &validator{file: path}
	cfg := &Config{Path: path, Digest: fmt.Sprintf("sha256:%x", sha256.Sum256(data))}
	switch {
	case len(f.Docs) == 0 || f.Docs[0].Body == nil:
		v.errorf(Pos{path, 1, 1}, "the file is empty; expected the keys targets, boards and known_red")
	case len(f.Docs) > 1:
		v.errorf(v.pos(f.Docs[1]), "a second YAML document; boards.yaml holds one, remove the ---")
	default:
		v.config(f.Docs[0].Body, cfg)
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

type posError struct {
	pos Pos
	msg string
}

type validator struct {
	file string
	errs []posError
}

func (v *validator) errorf(p Pos, format string, args ...any) {
	// Values quoted with %q come from the file: a 10 MB key is cut. The
	// message's own text (%s) is kept whole.
	for i, verb := range verbs(format) {
		if i >= len(args) {
			break
		}
		if s, ok := args[i].(string); ok && verb == 'q' {
			args[i] = cut(s)
		}
	}
	v.errs = append(v.errs, posError{p, fmt.Sprintf(format, args...)})
}

// verbs lists the verb of each argument of a Printf format, in order.
func verbs(format string) []byte {
	var out []byte
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0123456789.", format[i]) >= 0 {
			i++
		}
		if i < len(format) && format[i] != '%' {
			out = append(out, format[i])
		}
	}
	return out
}

func (v *validator) err() error {
	if len(v.errs) == 0 {
		return nil
	}
	sort.SliceStable(v.errs, func(i, j int) bool {
		a, b := v.errs[i].pos, v.errs[j].pos
		return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
	})
	var errs []error
	for i, e := range v.errs {
		if i == MaxErrors {
			errs = append(errs, fmt.Errorf("%s: and %d more errors", v.file, len(v.errs)-MaxErrors))
			break
		}
		errs = append(errs, fmt.Errorf("%s: %s", e.pos, e.msg))
	}
	return errors.Join(errs...)
}

var (
	envNameRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	nameRE     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	platformRE = regexp.MustCompile(`^[a-z0-9]+(/[a-z0-9]+)?$`)
	packageRE  = regexp.MustCompile(`^[A-Za-z0-9_.~+/][A-Za-z0-9_.~+/-]*$`)
)

func (v *validator) config(body any, cfg *Config) {
	n, ok := v.asNode(body)
	if !ok {
		return
	}
	fields := v.mapping(n, "at top level", "targets", "boards", "known_red", "history", "history_keep")
	if fields == nil {
		return
	}
	if f, ok := fields["targets"]; ok {
		for _, e := range v.namedMap(f.Value, f.key, "targets", "target") {
			if t := v.target(e); t != nil {
				cfg.Targets = append(cfg.Targets, t)
			}
		}
	} else {
		v.errorf(v.pos(n), "no targets; add targets: with at least one target (how to get the program under test)")
	}
	if f, ok := fields["boards"]; ok {
		for _, e := range v.namedMap(f.Value, f.key, "boards", "board") {
			if b := v.boardSpec(e, cfg); b != nil {
				cfg.Boards = append(cfg.Boards, b)
			}
		}
	} else {
		v.errorf(v.pos(n), "no boards; add boards: with at least one board (its packages, target and gating)")
	}
	if f, ok := fields["known_red"]; ok {
		v.knownReds(f, cfg)
	}
	if f, ok := fields["history"]; ok {
		cfg.History, _ = v.str(f, "history")
	}
	if f, ok := fields["history_keep"]; ok {
		cfg.HistoryKeep = v.historyKeep(f)
	}
}

// historyKeep reads history_keep: a number of runs (200), an age (90d,
// 720h), or both (runs: 200, age: 90d).
func (v *validator) historyKeep(f *mapField) HistoryKeep {
	var k HistoryKeep
	const want = "write history_keep: 200 (runs per board), history_keep: 90d (an age: d for days, or a Go duration such as 720h), or both as runs: and age:"
	switch {
	case v.isInt(f.Value):
		k.Runs = v.integer(f)
		if k.Runs <= 0 {
			v.errorf(v.valuePos(f), "history_keep %d must be positive; %s", k.Runs, want)
		}
	case v.isString(f.Value):
		s, _ := v.str(f, "history_keep")
		k.Age = v.age(f, s, want)
	default:
		n, ok := v.asNode(f.Value)
		if !ok {
			return k
		}
		if _, isMap := mappingValues(n); !isMap {
			v.errorf(v.valuePos(f), "history_keep is %s; %s", kind(n), want)
			return k
		}
		fields := v.mapping(n, "in history_keep", "runs", "age")
		if r, ok := fields["runs"]; ok {
			k.Runs = v.integer(r)
			if k.Runs <= 0 && v.isInt(r.Value) {
				v.errorf(v.valuePos(r), "history_keep runs %d must be positive", k.Runs)
			}
		}
		if a, ok := fields["age"]; ok {
			s, _ := v.str(a, "age")
			k.Age = v.age(a, s, want)
		}
	}
	return k
}

func (v *validator) age(f *mapField, s, want string) time.Duration {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 {
			return time.Duration(n) * 24 * time.Hour
		}
	} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d
	}
	v.errorf(v.valuePos(f), "history_keep age %q is not a positive age; %s", s, want)
	return 0
}

func (v *validator) target(e namedEntry) *Target {
	t := &Target{Name: e.name, Pos: e.pos}
	where := fmt.Sprintf("in target %q", e.name)
	fields := v.mapping(e.value, where, "binary", "binary_env", "build", "cache_var", "runtime_var", "log", "env", "env_pass", "features")
	if fields == nil {
		return nil
	}
	var sources []string
	for _, k := range []string{"binary", "binary_env", "build"} {
		f, ok := fields[k]
		if !ok {
			continue
		}
		sources = append(sources, k)
		s, _ := v.str(f, k)
		switch k {
		case "binary":
			t.Binary = s
		case "binary_env":
			t.BinaryEnv = s
			v.envName(f, s)
		case "build":
			t.Build = s
			v.packagePattern(v.valuePos(f), "build", s)
		}
	}
	switch len(sources) {
	case 0:
		v.errorf(e.pos, "target %q says neither binary, binary_env nor build; give exactly one (e.g. build: ./examples/demod)", e.name)
	case 1:
	default:
		v.errorf(e.pos, "target %q gives %s; give exactly one of binary, binary_env and build", e.name, strings.Join(sources, " and "))
	}
	for _, k := range []string{"cache_var", "runtime_var"} {
		f, ok := fields[k]
		if !ok {
			continue // optional: a program that takes its directories as flags uses $CACHE and $RUNTIME
		}
		s, _ := v.str(f, k)
		v.envName(f, s)
		if k == "cache_var" {
			t.CacheVar = s
		} else {
			t.RuntimeVar = s
		}
	}
	if f, ok := fields["log"]; ok {
		t.Log, _ = v.str(f, "log")
		if strings.HasPrefix(t.Log, "/") || slices.Contains(strings.Split(t.Log, "/"), "..") {
			v.errorf(v.valuePos(f), "log %q must be a path inside the cache dir (relative, no ..)", t.Log)
		}
	}
	if f, ok := fields["env"]; ok {
		t.Env = v.strMap(f, "env")
	}
	if f, ok := fields["env_pass"]; ok {
		t.EnvPass = v.strList(f, "env_pass")
		for _, name := range t.EnvPass {
			if !envNameRE.MatchString(name) {
				v.errorf(v.valuePos(f), "env_pass %q is not an environment variable name; use letters, digits and _", name)
			}
		}
	}
	if f, ok := fields["features"]; ok {
		t.Features = v.strList(f, "features")
	}
	return t
}

func (v *validator) envName(f *mapField, s string) {
	if s != "" && !envNameRE.MatchString(s) {
		v.errorf(v.valuePos(f), "%s %q is not an environment variable name; use letters, digits and _", f.name, s)
	}
}

func (v *validator) boardSpec(e namedEntry, cfg *Config) *BoardSpec {
	b := &BoardSpec{Name: e.name, Pos: e.pos}
	fields := v.mapping(e.value, fmt.Sprintf("in board %q", e.name), "packages", "target", "gating", "description", "rerun_fails")
	if fields == nil {
		return nil
	}
	if f, ok := fields["packages"]; ok {
		b.Packages = v.strList(f, "packages")
		if items, ok := f.Value.(*ast.SequenceNode); ok {
			for i, p := range b.Packages {
				if i < len(items.Values) {
					v.packagePattern(v.pos(items.Values[i]), "packages", p)
				}
			}
		}
		if len(b.Packages) == 0 && v.isList(f.Value) {
			v.errorf(v.valuePos(f), "board %q has an empty packages list; list at least one package pattern", e.name)
		}
	} else {
		v.errorf(e.pos, "board %q has no packages; add packages: [./guards/...] (go package patterns)", e.name)
	}
	if f, ok := fields["target"]; ok {
		b.Target, _ = v.str(f, "target")
		if b.Target != "" && cfg.Target(b.Target) == nil {
			var names []string
			for _, t := range cfg.Targets {
				names = append(names, t.Name)
			}
			v.errorf(v.valuePos(f), "board %q names target %q, which targets does not define; expected one of %s", e.name, b.Target, strings.Join(names, ", "))
		}
	} else {
		v.errorf(e.pos, "board %q has no target; add target: NAME, one of the targets above", e.name)
	}
	if f, ok := fields["gating"]; ok {
		b.Gating = v.boolean(f)
	} else {
		// No default: a guard board that silently stopped gating is worse
		// than a config error.
		v.errorf(e.pos, "board %q has no gating; say gating: true (a guard board that fails CI) or gating: false (a bug-repro board)", e.name)
	}
	if f, ok := fields["description"]; ok {
		b.Description, _ = v.str(f, "description")
	}
	if f, ok := fields["rerun_fails"]; ok {
		b.RerunFails = v.integer(f)
		if b.RerunFails < 0 || b.RerunFails > MaxRerunFails {
			v.errorf(v.valuePos(f), "rerun_fails must be between 0 and %d, got %d", MaxRerunFails, b.RerunFails)
		}
	}
	return b
}

// packagePattern refuses what go would read as anything but a package:
// the entries are passed to go build and go test, and "-toolexec=prog"
// there runs prog on every compile. Config is not a way to pass flags.
func (v *validator) packagePattern(p Pos, what, s string) {
	switch {
	case s == "":
		v.errorf(p, "%s entry is empty; write a package pattern such as ./guards/...", what)
	case strings.HasPrefix(s, "-"):
		v.errorf(p, "%s entry %q starts with -, which go reads as a flag; write a package pattern (./dir/... or an import path), flags are not accepted here", what, s)
	case !packageRE.MatchString(s):
		v.errorf(p, "%s entry %q is not a package pattern; write ./dir, ./dir/... or an import path (letters, digits and . _ ~ + / -)", what, s)
	}
}

func (v *validator) knownReds(f *mapField, cfg *Config) {
	if v.isNull(f.Value) {
		return // "known_red:" with nothing under it: no known reds
	}
	items, ok := v.list(f)
	if !ok {
		return
	}
	seen := map[string]Pos{}
	for _, item := range items {
		k := v.knownRed(item)
		if k == nil {
			continue
		}
		if k.Test != "" {
			if first, dup := seen[k.Test]; dup {
				v.errorf(k.Pos, "known_red entry for %s is a duplicate of the one at %d:%d; keep one entry per test", k.Test, first.Line, first.Col)
				continue
			}
			seen[k.Test] = k.Pos
		}
		cfg.KnownRed = append(cfg.KnownRed, k)
	}
}

func (v *validator) knownRed(item node) *KnownRed {
	k := &KnownRed{Pos: v.pos(item)}
	fields := v.mapping(item, "in known_red entry", "test", "issue", "reason", "signature", "platforms")
	if fields == nil {
		return nil
	}
	name := "entry"
	if f, ok := fields["test"]; ok {
		k.Test, _ = v.str(f, "test")
		switch {
		case k.Test == "":
		case !strings.HasPrefix(k.Test, "Test"):
			v.errorf(v.valuePos(f), "test %q is not a Go test name; write the full name as go test prints it, e.g. TestRepro/issue581", k.Test)
		case strings.ContainsAny(k.Test, " \t"):
			v.errorf(v.valuePos(f), "test %q has a space; go test prints subtest names with _ for spaces, write it that way", k.Test)
		}
		if k.Test != "" {
			name = "entry for " + k.Test
		}
	} else {
		v.errorf(k.Pos, "known_red entry has no test; add test: TestName/subtest, the full name of the failing section")
	}
	if f, ok := fields["issue"]; ok {
		k.Issue = v.integer(f)
		if k.Issue <= 0 && v.isInt(f.Value) {
			v.errorf(v.valuePos(f), "issue must be a positive issue number, got %d", k.Issue)
		}
	} else {
		v.errorf(k.Pos, "known_red %s has no issue; add issue: N, the number of the bug it reproduces", name)
	}
	if f, ok := fields["reason"]; ok {
		k.Reason, _ = v.str(f, "reason")
		k.Reason = strings.TrimSpace(k.Reason)
		if k.Reason == "" && v.isString(f.Value) {
			v.errorf(v.valuePos(f), "known_red %s has an empty reason; say in one line what is broken", name)
		}
	} else {
		v.errorf(k.Pos, "known_red %s has no reason; add reason: a line saying what is broken", name)
	}
	if f, ok := fields["signature"]; ok {
		s, _ := v.str(f, "signature")
		switch re, err := regexp.Compile(s); {
		case err != nil:
			v.errorf(v.valuePos(f), "signature of %s is not a valid Go regexp: %v; fix it (syntax: https://pkg.go.dev/regexp/syntax)", k.Test, err)
		case s == "" && v.isString(f.Value):
			v.errorf(v.valuePos(f), "known_red %s has an empty signature, which matches any failure; pin a line of its failure output", name)
		default:
			k.Signature = re
		}
	} else {
		v.errorf(k.Pos, "known_red %s has no signature; add signature: a Go regexp matching its failure output, so a different failure is not whitelisted", name)
	}
	if f, ok := fields["platforms"]; ok {
		k.Platforms = v.strList(f, "platforms")
		for _, p := range k.Platforms {
			if !platformRE.MatchString(p) {
				v.errorf(v.valuePos(f), "platform %q is not GOOS or GOOS/GOARCH (e.g. linux, darwin, linux/amd64)", p)
			}
		}
	}
	return k
}
