package config

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// The validator reads the YAML AST, not a decoded struct, because only the
// AST knows where each key and value sits: every error carries line:col.

type node = ast.Node

var digitsRE = regexp.MustCompile(`^[0-9]+$`)

// mapField is one key: value of a mapping.
type mapField struct {
	name  string
	key   node
	Value node
}

// namedEntry is one NAME: {...} of the targets or boards mapping.
type namedEntry struct {
	name  string
	pos   Pos
	value node
}

func (v *validator) pos(n node) Pos {
	switch n := n.(type) {
	case *ast.MappingNode:
		if len(n.Values) > 0 {
			return v.pos(n.Values[0].Key)
		}
	case *ast.MappingValueNode:
		return v.pos(n.Key)
	case *ast.AnchorNode:
		return v.pos(n.Value)
	case *ast.DocumentNode:
		if n.Start != nil {
			return Pos{v.file, n.Start.Position.Line, n.Start.Position.Column}
		}
		if n.Body != nil {
			return v.pos(n.Body)
		}
	}
	if n == nil || n.GetToken() == nil {
		return Pos{v.file, 1, 1}
	}
	p := n.GetToken().Position
	return Pos{v.file, p.Line, p.Column}
}

// valuePos is where a field's value is, or its key when it has none.
func (v *validator) valuePos(f *mapField) Pos {
	if v.isNull(f.Value) {
		return v.pos(f.key)
	}
	return v.pos(f.Value)
}

// asNode unwraps anchors and refuses aliases and tags, which would make
// the file harder to read than the few lines they save.
func (v *validator) asNode(n any) (node, bool) {
	nd, _ := n.(node)
	for {
		switch a := nd.(type) {
		case *ast.AnchorNode:
			nd = a.Value
			continue
		case *ast.AliasNode:
			v.errorf(v.pos(a), "aliases (*name) are not supported in boards.yaml; write the value out")
			return nil, false
		case *ast.TagNode:
			v.errorf(v.pos(a), "tags (!name) are not supported in boards.yaml; remove %s", a.Start.Value)
			return nil, false
		}
		return nd, true
	}
}

func (v *validator) isNull(n node) bool {
	n, _ = v.asNodeQuiet(n)
	_, null := n.(*ast.NullNode)
	return n == nil || null
}

func (v *validator) isList(n node) bool {
	n, _ = v.asNodeQuiet(n)
	_, ok := n.(*ast.SequenceNode)
	return ok
}
func (v *validator) isInt(n node) bool {
	n, _ = v.asNodeQuiet(n)
	_, ok := n.(*ast.IntegerNode)
	return ok
}
func (v *validator) isString(n node) bool { _, ok := stringValue(n); return ok }

func (v *validator) asNodeQuiet(n node) (node, bool) {
	for {
		a, ok := n.(*ast.AnchorNode)
		if !ok {
			return n, true
		}
		n = a.Value
	}
}

// kind names what a node is, for "expected X, got Y" messages.
func kind(n node) string {
	switch n := n.(type) {
	case nil, *ast.NullNode:
		return "nothing"
	case *ast.StringNode:
		return fmt.Sprintf("the string %q", n.Value)
	case *ast.LiteralNode:
		return "a block of text"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "the number " + n.GetToken().Value
	case *ast.BoolNode:
		return "the boolean " + n.GetToken().Value
	case *ast.SequenceNode:
		return "a list"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.AnchorNode:
		return kind(n.Value)
	}
	return "a " + strings.ToLower(n.Type().String())
}

func stringValue(n node) (string, bool) {
	switch n := n.(type) {
	case *ast.StringNode:
		return n.Value, true
	case *ast.LiteralNode:
		return n.Value.Value, true
	case *ast.AnchorNode:
		return stringValue(n.Value)
	}
	return "", false
}

func mappingValues(n node) ([]*ast.MappingValueNode, bool) {
	switch n := n.(type) {
	case *ast.MappingNode:
		return n.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{n}, true
	}
	return nil, false
}

func keyName(k node) string {
	if s, ok := stringValue(k); ok {
		return s
	}
	if k == nil || k.GetToken() == nil {
		return ""
	}
	return k.GetToken().Value
}

// mapping checks that n is a mapping whose keys are all allowed and
// unique, and returns its fields by key (the first of a repeated key).
func (v *validator) mapping(n node, where string, allowed ...string) map[string]*mapField {
	n, ok := v.asNode(n)
	if !ok {
		return nil
	}
	kvs, ok := mappingValues(n)
	if !ok {
		v.errorf(v.pos(n), "expected a mapping with the keys %s %s, got %s", strings.Join(allowed, ", "), where, kind(n))
		return nil
	}
	fields := map[string]*mapField{}
	for _, kv := range kvs {
		name := keyName(kv.Key)
		p := v.pos(kv.Key)
		if first, dup := fields[name]; dup {
			fp := v.pos(first.key)
			v.errorf(p, "key %q repeats %s (first at %d:%d); keep one", name, where, fp.Line, fp.Col)
			continue
		}
		known := false
		for _, a := range allowed {
			known = known || a == name
		}
		if !known {
			hint := ""
			if near := nearest(name, allowed); near != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", near)
			}
			v.errorf(p, "unknown key %q %s%s; expected one of %s", name, where, hint, strings.Join(allowed, ", "))
			continue
		}
		fields[name] = &mapField{name: name, key: kv.Key, Value: kv.Value}
	}
	return fields
}

// namedMap reads a mapping of NAME: {...} (targets, boards).
func (v *validator) namedMap(n node, key node, section, what string) []namedEntry {
	n, ok := v.asNode(n)
	if !ok {
		return nil
	}
	if v.isNull(n) {
		v.errorf(v.pos(key), "%s is empty; define at least one %s under it", section, what)
		return nil
	}
	kvs, ok := mappingValues(n)
	if !ok {
		v.errorf(v.pos(n), "%s must be a mapping of %s names to their settings, got %s", section, what, kind(n))
		return nil
	}
	var out []namedEntry
	seen := map[string]Pos{}
	for _, kv := range kvs {
		name, p := keyName(kv.Key), v.pos(kv.Key)
		if first, dup := seen[name]; dup {
			v.errorf(p, "%s %q is defined twice (first at %d:%d); keep one", what, name, first.Line, first.Col)
			continue
		}
		seen[name] = p
		if !nameRE.MatchString(name) {
			v.errorf(p, "%s name %q is not usable in file names; use letters, digits, ., _ and -", what, name)
			continue
		}
		out = append(out, namedEntry{name: name, pos: p, value: kv.Value})
	}
	return out
}

func (v *validator) str(f *mapField, what string) (string, bool) {
	if s, ok := stringValue(f.Value); ok {
		return s, v.text(v.valuePos(f), what, s)
	}
	if v.isNull(f.Value) {
		v.errorf(v.valuePos(f), "%s has no value; write %s: VALUE", what, what)
	} else {
		v.errorf(v.valuePos(f), "%s must be a string, got %s; quote it", what, kind(f.Value))
	}
	return "", false
}

// text refuses control characters in a decoded string ("\0" in double
// quotes): they reach reports, terminals and file names. Newlines and tabs
// are text.
func (v *validator) text(p Pos, what, s string) bool {
	for i, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			v.errorf(p, "%s holds the control character %U at byte %d; remove it", what, r, i)
			return false
		}
	}
	return true
}

func (v *validator) integer(f *mapField) int {
	n, _ := v.asNodeQuiet(f.Value)
	if in, ok := n.(*ast.IntegerNode); ok {
		switch x := in.Value.(type) {
		case int64:
			if x >= math.MinInt32 && x <= math.MaxInt32 {
				return int(x)
			}
		case uint64:
			if x <= math.MaxInt32 {
				return int(x)
			}
		}
		v.errorf(v.valuePos(f), "%s %s is out of range", f.name, in.GetToken().Value)
		return 0
	}
	if tok := n.GetToken(); tok != nil && digitsRE.MatchString(tok.Value) && tok.Type != token.DoubleQuoteType && tok.Type != token.SingleQuoteType {
		v.errorf(v.valuePos(f), "%s %s is out of range; an issue number is below 2^31", f.name, cut(tok.Value))
		return 0
	}
	v.errorf(v.valuePos(f), "%s must be an integer, got %s; write it unquoted, e.g. %s: 581", f.name, kind(n), f.name)
	return 0
}

func (v *validator) boolean(f *mapField) bool {
	n, _ := v.asNodeQuiet(f.Value)
	if b, ok := n.(*ast.BoolNode); ok {
		return b.Value
	}
	v.errorf(v.valuePos(f), "%s must be true or false, got %s", f.name, kind(n))
	return false
}

func (v *validator) list(f *mapField) ([]node, bool) {
	n, ok := v.asNode(f.Value)
	if !ok {
		return nil, false
	}
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		v.errorf(v.valuePos(f), "%s must be a list (lines starting with -), got %s", f.name, kind(n))
		return nil, false
	}
	return seq.Values, true
}

func (v *validator) strList(f *mapField, what string) []string {
	items, ok := v.list(f)
	if !ok {
		return nil
	}
	var out []string
	for _, it := range items {
		s, ok := stringValue(it)
		if !ok {
			v.errorf(v.pos(it), "every item of %s must be a string, got %s", what, kind(it))
			continue
		}
		if !v.text(v.pos(it), what, s) {
			continue
		}
		out = append(out, s)
	}
	return out
}

func (v *validator) strMap(f *mapField, what string) map[string]string {
	n, ok := v.asNode(f.Value)
	if !ok {
		return nil
	}
	kvs, ok := mappingValues(n)
	if !ok {
		v.errorf(v.valuePos(f), "%s must be a mapping of NAME: value, got %s", what, kind(n))
		return nil
	}
	out := map[string]string{}
	firstAt := map[string]Pos{}
	for _, kv := range kvs {
		name, p := keyName(kv.Key), v.pos(kv.Key)
		if first, dup := firstAt[name]; dup {
			v.errorf(p, "key %q repeats in %s (first at %d:%d); keep one", name, what, first.Line, first.Col)
			continue
		}
		firstAt[name] = p
		if !envNameRE.MatchString(name) {
			v.errorf(p, "%q in %s is not an environment variable name; use letters, digits and _", name, what)
		}
		val := &mapField{name: name, key: kv.Key, Value: kv.Value}
		if s, ok := stringValue(kv.Value); ok {
			if v.text(v.valuePos(val), what+"."+name, s) {
				out[name] = s
			}
		} else {
			v.errorf(v.valuePos(val), "%s.%s must be a string, got %s; quote it", what, name, kind(kv.Value))
		}
	}
	return out
}

// nearest returns the allowed key within two edits of name, for a "did you
// mean" on a typo.
func nearest(name string, allowed []string) string {
	best, bestD := "", 3
	for _, a := range allowed {
		if d := editDistance(name, a); d < bestD {
			best, bestD = a, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
