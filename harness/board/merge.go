package board

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
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

// Merge combines the boards of the shards of one run into one board and
// rescores it. Each section must come from exactly one shard: two shards
// that ran the same section were not partitions of one run.
func Merge(parts []*Board, names []string) (*Board, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("nothing to merge: give the JSON reports of the shards")
	}
	first := parts[0]
	m := &Board{
		Schema: Schema, Name: first.Name, Target: first.Target, Gating: first.Gating,
		Platform: first.Platform, Sections: []Section{},
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
	m.Platform = strings.Join(platforms, ",")
	m.RunInfo = mergeRunInfo(parts)
	m.Score()
	return m, nil
}
