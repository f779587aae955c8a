package board

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reproboard/reproboard/harness/outcome"
)

// RelativeTo returns a copy of b whose file paths (Events and artefacts)
// that lie inside dir are relative to it: a JSON report written in dir
// then travels with the files next to it (a CI artefact directory).
func (b *Board) RelativeTo(dir string) *Board {
	c := *b
	c.Events = relativeTo(dir, b.Events)
	c.Sections = make([]Section, len(b.Sections))
	for i, s := range b.Sections {
		s.Artifacts = maps.Clone(s.Artifacts)
		for k, p := range s.Artifacts {
			s.Artifacts[k] = relativeTo(dir, p)
		}
		c.Sections[i] = s
	}
	return &c
}

// Resolve makes b's relative file paths absolute against dir, the
// directory of the JSON report it was read from.
func (b *Board) Resolve(dir string) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	b.Events = abs(b.Events)
	for _, s := range b.Sections {
		for k, p := range s.Artifacts {
			s.Artifacts[k] = abs(p)
		}
	}
}

func relativeTo(dir, p string) string {
	if p == "" || !filepath.IsAbs(p) {
		return p
	}
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return rel
}

// MergeOptions say how strict a merge is.
type MergeOptions struct {
	// AllowPartial merges a shard set with shards missing; the board then
	// says PARTIAL (Board.Partial) and cannot exit 0.
	AllowPartial bool
}

// Merge combines the boards of the shards of one run into one board and
// rescores it. It checks that the parts are exactly the shards 1..n of
// one run of one board (same n, same boards.yaml, same listing): a
// missing, duplicate or foreign shard is an error naming it, because a
// merge of a shard set that lost a job must not read green. Each section
// must come from exactly one shard.
func Merge(parts []*Board, names []string, opts MergeOptions) (*Board, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("nothing to merge: give the JSON reports of the shards")
	}
	first := parts[0]
	m := &Board{
		Schema: Schema, Name: first.Name, Target: first.Target, Gating: first.Gating,
		Platform: first.Platform, Sections: []Section{},
	}
	missing, err := checkShardSet(parts, names)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 && !opts.AllowPartial {
		return nil, fmt.Errorf("board %s: shard(s) %s missing; merge needs every shard 1..n of one run (got %s): give the missing reports, or pass --allow-partial to merge anyway and report the board PARTIAL",
			first.Name, strings.Join(missing, ", "), shardsGiven(parts, names))
	}
	from := map[[2]string]string{}
	problems := map[Problem]bool{}
	skipped := map[Skipped]bool{}
	var platforms []string
	for i, p := range parts {
		name := names[i]
		if p.Name != first.Name || p.Gating != first.Gating || p.Target != first.Target {
			return nil, fmt.Errorf("%s is board %q (gating %v, target %s) but %s is board %q (gating %v, target %s): merge the shards of one board at a time",
				names[0], first.Name, first.Gating, first.Target, name, p.Name, p.Gating, p.Target)
		}
		m.Strict = m.Strict || p.Strict
		if !slices.Contains(platforms, p.Platform) {
			platforms = append(platforms, p.Platform)
		}
		if p.Shard != "" {
			m.Merged = append(m.Merged, p.Shard)
		}
		if p.Run != nil {
			if m.Run == nil {
				m.Run = &RunKey{Config: p.Run.Config, Listing: p.Run.Listing}
			}
			m.Run.Assigned = append(m.Run.Assigned, p.Run.Assigned...)
		}
		for _, s := range p.Sections {
			k := [2]string{s.Package, s.Test}
			if prev, dup := from[k]; dup {
				return nil, fmt.Errorf("section %s (%s) is in both %s and %s: the shards overlap; merge the reports of one sharded run (--shard 1/n ... n/n)", s.Test, s.Package, prev, name)
			}
			from[k] = name
			m.Sections = append(m.Sections, s)
		}
		for _, s := range p.Skipped {
			if !skipped[s] {
				skipped[s] = true
				m.Skipped = append(m.Skipped, s)
			}
		}
		for _, pr := range p.Problems {
			if !problems[pr] { // a package that did not build fails every shard
				problems[pr] = true
				m.Problems = append(m.Problems, pr)
			}
		}
	}
	if m.Run != nil {
		slices.Sort(m.Run.Assigned)
	}
	if len(missing) > 0 {
		m.Partial = missing
		m.Problems = append(m.Problems, Problem{Kind: ProblemPartial,
			Message: fmt.Sprintf("PARTIAL: shard(s) %s missing, merged anyway (--allow-partial); their sections were not verified", strings.Join(missing, ", "))})
	}
	m.Platform = strings.Join(platforms, ",")
	m.RunInfo = mergeRunInfo(parts)
	m.Score()
	return m, nil
}

// checkShardSet checks that parts are shards of one run and returns the
// shards ("k/n") missing from it.
func checkShardSet(parts []*Board, names []string) (missing []string, err error) {
	if len(parts) == 1 && parts[0].Shard == "" {
		return nil, nil // one unsharded run: nothing to combine, nothing missing
	}
	n := 0
	have := map[int]string{}
	for i, p := range parts {
		if p.Shard == "" {
			return nil, fmt.Errorf("%s is an unsharded run of board %s: merge takes the shards of one run (--shard 1/n ... n/n), or one unsharded report", names[i], p.Name)
		}
		k, pn, err := outcome.ParseShard(p.Shard)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", names[i], err)
		}
		if n == 0 {
			n = pn
		}
		if pn != n {
			return nil, fmt.Errorf("%s is shard %s but %s is shard %d/%d of board %s: not the shards of one run", names[i], p.Shard, names[0], mustK(parts[0].Shard), n, p.Name)
		}
		if prev, dup := have[k]; dup {
			return nil, fmt.Errorf("shard %s of board %s is given twice, %s and %s: give each shard's report once", p.Shard, p.Name, prev, names[i])
		}
		have[k] = names[i]
		switch {
		case p.Run == nil || parts[0].Run == nil:
			return nil, fmt.Errorf("%s names no run_key (written by an older reproboard): rerun the shards with this one", names[i])
		case p.Run.Config != parts[0].Run.Config:
			return nil, fmt.Errorf("%s ran under another boards.yaml (%s) than %s (%s): not the shards of one run; rerun them from one commit", names[i], p.Run.Config, names[0], parts[0].Run.Config)
		case p.Run.Listing != parts[0].Run.Listing:
			return nil, fmt.Errorf("%s listed other sections of board %s (%s) than %s (%s): not the shards of one run; rerun them from one commit", names[i], p.Name, p.Run.Listing, names[0], parts[0].Run.Listing)
		}
	}
	for k := 1; k <= n; k++ {
		if _, ok := have[k]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", k, n))
		}
	}
	return missing, nil
}

func mustK(shard string) int {
	k, _, _ := outcome.ParseShard(shard)
	return k
}

func shardsGiven(parts []*Board, names []string) string {
	var given []string
	for i, p := range parts {
		given = append(given, p.Shard+" in "+names[i])
	}
	return strings.Join(given, ", ")
}

// ListingDigest is the RunKey.Listing of a board's sorted section names.
func ListingDigest(names []string) string {
	sorted := slices.Sorted(slices.Values(names))
	h := sha256.New()
	for _, n := range sorted {
		h.Write([]byte(n))
		h.Write([]byte{'\n'})
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil))
}
