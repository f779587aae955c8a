package board

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/reproboard/reproboard/harness/excerpt"
)

// Event is one line of `go test -json` as Go 1.26 writes it (cmd/test2json;
// field names checked against a real run: "attr" events carry Key and
// Value, build output arrives as "build-output"/"build-fail" events keyed by
// ImportPath, and a package that did not build fails with FailedBuild).
type Event struct {
	Time        time.Time `json:",omitzero"`
	Action      string
	Package     string  `json:",omitempty"`
	Test        string  `json:",omitempty"`
	Elapsed     float64 `json:",omitempty"`
	Output      string  `json:",omitempty"`
	Key         string  `json:",omitempty"`
	Value       string  `json:",omitempty"`
	ImportPath  string  `json:",omitempty"`
	FailedBuild string  `json:",omitempty"`
}

// ParseEvent decodes one line of `go test -json`.
func ParseEvent(line []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(line, &e); err != nil {
		return Event{}, fmt.Errorf("not a go test -json event: %v", err)
	}
	if e.Action == "" {
		return Event{}, fmt.Errorf("not a go test -json event: no Action")
	}
	return e, nil
}

// OutputLimit bounds the output kept per section: a target that prints
// gigabytes must not grow the board.
const OutputLimit = 64 << 10

// SectionResult is what `go test` said about one section.
//
// A section is a leaf test: a test that ran no subtests. Parents exist to
// hold subtests and are not sections, with one exception: a parent that
// fails while none of its subtests failed (its own code failed, e.g. a
// shared fixture's cleanup) is reported as a section, because otherwise
// that failure would belong to no row on the board.
type SectionResult struct {
	Package string
	Test    string // full name, subtests included: TestRepro/issue581
	Action  string // "pass", "fail" or "skip"
	Elapsed time.Duration
	// Output is the tail of the section's output (at most OutputLimit
	// bytes, starting "...(N chars elided)...\n" when cut), without the
	// "=== RUN"/"--- PASS" framing go test adds.
	Output     string
	Attrs      map[string]string // t.Attr; the last value of a key wins
	SkipReason string            // the t.Skip message, for skipped sections
	// Incomplete: the test started and never ended, because its test binary
	// died under it (a -timeout panic, a crash). It counts as failed.
	Incomplete bool
	Parent     bool // a parent reported as a section, see above
}

// Executed reports whether the section ran; skipped sections are not
// counted anywhere on the board.
func (s SectionResult) Executed() bool { return s.Action == "pass" || s.Action == "fail" }

// Dry-run and shard skips are how the harness lists and partitions
// sections (see package outcome); they are not skips a reader cares about.
const (
	dryRunSkipPrefix = "reproboard dry run"
	shardSkipPrefix  = "reproboard shard"
)

// Listed reports a section skipped by a dry run (REPROBOARD_DRYRUN=1).
func (s SectionResult) Listed() bool {
	return s.Action == "skip" && strings.HasPrefix(s.SkipReason, dryRunSkipPrefix)
}

// OtherShard reports a section skipped because it belongs to another shard.
func (s SectionResult) OtherShard() bool {
	return s.Action == "skip" && strings.HasPrefix(s.SkipReason, shardSkipPrefix)
}

// Kinds of Problem.
const (
	ProblemBuild   = "build-failed"   // a package did not build, or failed before any test ran
	ProblemPackage = "package-failed" // a package failed outside any section (TestMain, a leak check)
	ProblemNotRun  = "not-run"        // listed sections that never ran: the test binary stopped early
	ProblemGoTest  = "go-test"        // go test itself failed without saying why in its events
	ProblemPartial = "partial"        // a merge without every shard (--allow-partial)
)

// Problem is a failure that belongs to no section. Any problem makes the
// board exit 2 unless a regression makes it 1.
type Problem struct {
	Package string `json:"package,omitempty"`
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Excerpt string `json:"excerpt,omitempty"`
}

// Results are the sections and problems of one `go test -json` run.
type Results struct {
	Sections []SectionResult // in the order they finished; skipped ones included
	Problems []Problem
}

// Executed returns the sections that ran.
func (r *Results) Executed() []SectionResult {
	var out []SectionResult
	for _, s := range r.Sections {
		if s.Executed() {
			out = append(out, s)
		}
	}
	return out
}

// Names returns the full test names of all sections, skipped included: a
// dry run's listing.
func (r *Results) Names() []string {
	var out []string
	for _, s := range r.Sections {
		out = append(out, s.Test)
	}
	return out
}

// Collect reads a whole `go test -json` stream. Lines that are not events
// (go test prints some of its own errors as plain text) are kept as a
// ProblemGoTest only when nothing else explains a failure; see Collector.
func Collect(r io.Reader) (*Results, error) {
	c := NewCollector()
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			c.AddLine(line)
		}
		if err == io.EOF {
			return c.Results(), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Collector turns events into section results one at a time, so a caller
// can show progress while `go test` runs.
type Collector struct {
	tests    map[testKey]*testState
	order    []testKey // run order, to finalise incomplete tests deepest first
	pkgs     map[string]*pkgState
	pkgOrder []string
	builds   map[string]*excerpt.Tail // build output by ImportPath
	stray    *excerpt.Tail
	results  Results
}

type testKey struct{ pkg, test string }

type testState struct {
	done, hasSub, subFailed bool
	attrs                   map[string]string
	out                     *excerpt.Tail
	lastMsg                 string
}

type pkgState struct {
	out                   *excerpt.Tail
	done, failed, sawTest bool
	failedBuild           string
	sectionFailed         bool
}

// NewCollector returns an empty Collector.
func NewCollector() *Collector {
	return &Collector{
		tests:  map[testKey]*testState{},
		pkgs:   map[string]*pkgState{},
		builds: map[string]*excerpt.Tail{},
		stray:  excerpt.NewTail(4 << 10),
	}
}

// AddLine adds one raw line; a line that is not an event is kept aside.
func (c *Collector) AddLine(line []byte) *SectionResult {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return nil
	}
	e, err := ParseEvent(trimmed)
	if err != nil {
		_, _ = c.stray.Write(append(trimmed, '\n'))
		return nil
	}
	return c.Add(e)
}

// Add adds one event and returns the section it finished, if any.
func (c *Collector) Add(e Event) *SectionResult {
	switch e.Action {
	case "build-output":
		t := c.builds[e.ImportPath]
		if t == nil {
			t = excerpt.NewTail(OutputLimit)
			c.builds[e.ImportPath] = t
		}
		_, _ = t.Write([]byte(e.Output))
		return nil
	case "build-fail":
		return nil
	}
	if e.Package == "" {
		return nil
	}
	p := c.pkg(e.Package)
	if e.Test == "" {
		switch e.Action {
		case "output":
			_, _ = p.out.Write([]byte(e.Output))
		case "pass", "fail", "skip":
			c.finishPackage(e.Package, p, e)
		}
		return nil
	}
	p.sawTest = true
	k := testKey{e.Package, e.Test}
	t := c.tests[k]
	if t == nil {
		t = &testState{out: excerpt.NewTail(OutputLimit)}
		c.tests[k] = t
		c.order = append(c.order, k)
		for anc := e.Test; strings.Contains(anc, "/"); {
			anc = anc[:strings.LastIndex(anc, "/")]
			if a := c.tests[testKey{e.Package, anc}]; a != nil {
				a.hasSub = true
			}
		}
	}
	switch e.Action {
	case "output":
		if !isFraming(e.Output) {
			_, _ = t.out.Write([]byte(e.Output))
			if m := strings.TrimSpace(e.Output); m != "" {
				t.lastMsg = m
			}
		}
	case "attr":
		if t.attrs == nil {
			t.attrs = map[string]string{}
		}
		t.attrs[e.Key] = e.Value
	case "pass", "fail", "skip":
		return c.finishTest(k, t, e.Action, time.Duration(e.Elapsed*float64(time.Second)), false)
	}
	return nil
}

func (c *Collector) pkg(name string) *pkgState {
	p := c.pkgs[name]
	if p == nil {
		p = &pkgState{out: excerpt.NewTail(OutputLimit)}
		c.pkgs[name] = p
		c.pkgOrder = append(c.pkgOrder, name)
	}
	return p
}

func (c *Collector) finishTest(k testKey, t *testState, action string, elapsed time.Duration, incomplete bool) *SectionResult {
	if t.done {
		return nil
	}
	t.done = true
	if action == "fail" {
		c.pkgs[k.pkg].sectionFailed = true
	}
	if t.hasSub && (action != "fail" || t.subFailed) {
		c.markAncestorsFailed(k, action == "fail")
		return nil // a parent: its subtests are the sections
	}
	c.markAncestorsFailed(k, action == "fail")
	s := SectionResult{
		Package:    k.pkg,
		Test:       k.test,
		Action:     action,
		Elapsed:    elapsed,
		Output:     t.out.String(),
		Attrs:      t.attrs,
		Incomplete: incomplete,
		Parent:     t.hasSub,
	}
	if action == "skip" {
		s.SkipReason = skipReason(s.Output, t.lastMsg)
	}
	c.results.Sections = append(c.results.Sections, s)
	return &s
}

func (c *Collector) markAncestorsFailed(k testKey, failed bool) {
	if !failed {
		return
	}
	for anc := k.test; strings.Contains(anc, "/"); {
		anc = anc[:strings.LastIndex(anc, "/")]
		if a := c.tests[testKey{k.pkg, anc}]; a != nil {
			a.subFailed = true
		}
	}
}

// finishIncomplete fails the tests of pkg that started and never ended,
// deepest first so that a parent sees whether a subtest already failed.
func (c *Collector) finishIncomplete(pkg string) {
	var open []testKey
	for _, k := range c.order {
		if k.pkg == pkg && !c.tests[k].done {
			open = append(open, k)
		}
	}
	sort.SliceStable(open, func(i, j int) bool {
		return strings.Count(open[i].test, "/") > strings.Count(open[j].test, "/")
	})
	for _, k := range open {
		c.finishTest(k, c.tests[k], "fail", 0, true)
	}
}

func (c *Collector) finishPackage(name string, p *pkgState, e Event) {
	if p.done {
		return
	}
	p.done = true
	c.finishIncomplete(name)
	if e.Action != "fail" {
		return
	}
	p.failed = true
	switch {
	case e.FailedBuild != "":
		out := ""
		if b := c.builds[e.FailedBuild]; b != nil {
			out = b.String()
		}
		c.results.Problems = append(c.results.Problems, Problem{
			Package: name, Kind: ProblemBuild,
			Message: fmt.Sprintf("package %s did not build: %s", name, firstError(out)),
			Excerpt: excerpt.Excerpt(out, 0),
		})
	case !p.sawTest:
		c.results.Problems = append(c.results.Problems, Problem{
			Package: name, Kind: ProblemBuild,
			Message: fmt.Sprintf("package %s failed before any test ran (a build problem, init or TestMain): %s", name, firstError(p.out.String())),
			Excerpt: excerpt.Excerpt(p.out.String(), 0),
		})
	case !p.sectionFailed:
		c.results.Problems = append(c.results.Problems, Problem{
			Package: name, Kind: ProblemPackage,
			Message: fmt.Sprintf("package %s failed outside any section (TestMain or a check after the tests): %s", name, firstError(p.out.String())),
			Excerpt: excerpt.Excerpt(p.out.String(), 0),
		})
	}
}

// Results finishes the stream: packages that never reported an end (the
// stream was cut) have their open tests failed as incomplete.
func (c *Collector) Results() *Results {
	for _, name := range c.pkgOrder {
		if !c.pkgs[name].done {
			c.finishIncomplete(name)
		}
	}
	r := c.results
	r.Sections = append([]SectionResult(nil), r.Sections...)
	r.Problems = append([]Problem(nil), r.Problems...)
	return &r
}

// Stray returns the lines of the stream that were not events (go test's
// own errors, such as a pattern that matched no packages).
func (c *Collector) Stray() string { return c.stray.String() }

var framing = []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "=== ATTR", "--- PASS:", "--- FAIL:", "--- SKIP:"}

// isFraming reports the lines go test adds around a test's own output.
// ATTR lines are dropped too: attributes arrive as their own events.
func isFraming(line string) bool {
	l := strings.TrimLeft(line, " ")
	for _, f := range framing {
		if strings.HasPrefix(l, f) {
			return true
		}
	}
	return false
}

var logPrefixRE = regexp.MustCompile(`^\S+\.go:\d+: `)

// logMessage strips the "file_test.go:12: " that t.Log puts before a message.
// skipReason is the t.Skip message of a skipped section. The harness's own
// dry-run and shard skips are found on any line: testscript, for one, logs
// its own "testscript.go:N:" line after the skip message.
func skipReason(output, last string) string {
	var reason string
	for _, line := range strings.Split(output, "\n") {
		m := logMessage(line)
		if strings.HasPrefix(m, dryRunSkipPrefix) || strings.HasPrefix(m, shardSkipPrefix) {
			return m
		}
		if m != "" && !logPrefixOnlyRE.MatchString(m) {
			reason = m
		}
	}
	if reason == "" {
		reason = logMessage(last)
	}
	return reason
}

var logPrefixOnlyRE = regexp.MustCompile(`^\S+\.go:\d+:$`)

func logMessage(line string) string {
	return logPrefixRE.ReplaceAllString(strings.TrimSpace(line), "")
}

// firstError picks the line a reader needs first from build or test
// output: the first "file.go:L:C: msg" or "file_test.go:L: msg" or panic.
func firstError(out string) string {
	for _, line := range strings.Split(out, "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "panic: ") || errorLineRE.MatchString(l) {
			return excerpt.OneLine(l, 200)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		l := strings.TrimSpace(line)
		if l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "...(") && l != "FAIL" && !strings.HasPrefix(l, "FAIL\t") {
			return excerpt.OneLine(l, 200)
		}
	}
	return "no message (see the excerpt)"
}

var errorLineRE = regexp.MustCompile(`^\S+\.go:\d+(:\d+)?: `)

// failureLine picks a failed test's one-line reason: a panic if there was
// one, else the last "FAIL: ..." line (testscript's failing command), else
// the last logged line (t.Fatal comes last: the error comes last).
func failureLine(out string) string {
	lines := strings.Split(out, "\n")
	for _, line := range lines {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "panic: ") {
			return excerpt.OneLine(l, 200)
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "FAIL: ") {
			return excerpt.OneLine(l, 200)
		}
	}
	if l := lastLogged(lines); l != "" {
		return excerpt.OneLine(l, 200)
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && l != "FAIL" && !strings.HasPrefix(l, "...(") {
			return excerpt.OneLine(l, 200)
		}
	}
	return "failed without a message (see the excerpt)"
}

func lastLogged(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); errorLineRE.MatchString(l) {
			return l
		}
	}
	return ""
}
