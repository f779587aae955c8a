package store

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Index is what the indexer found in one repository.
type Index struct {
	Project string
	Root    string
	Files   []File
}

// File is one source file and its function definitions.
type File struct {
	Path      string // relative to the root, slash-separated
	Language  string
	Functions []Def
}

// Def is one function definition.
type Def struct {
	Name string
	Line int
}

// Limits that keep one index_repository call bounded on a huge tree.
const (
	MaxFiles    = 20000
	MaxFileSize = 1 << 20
)

type language struct {
	name string
	defs *regexp.Regexp // first submatch is the function name
}

var languages = map[string]language{
	".go":  {"go", regexp.MustCompile(`^\s*func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)`)},
	".py":  {"python", regexp.MustCompile(`^\s*(?:async\s+)?def\s+([A-Za-z_]\w*)`)},
	".js":  {"javascript", jsDefs},
	".mjs": {"javascript", jsDefs},
	".jsx": {"javascript", jsDefs},
	".ts":  {"typescript", jsDefs},
	".tsx": {"typescript", jsDefs},
}

var jsDefs = regexp.MustCompile(`\bfunction\s*\*?\s*([A-Za-z_$][\w$]*)`)

// IndexDir walks root and records every source file and its functions.
// The project is named after the directory.
func IndexDir(root string) (*Index, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", abs)
	}
	idx := &Index{Project: filepath.Base(abs), Root: abs}
	errTooMany := errors.New("too many files")
	err = filepath.WalkDir(abs, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are skipped, not fatal
		}
		if d.IsDir() {
			if path != abs && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		lang, ok := languages[strings.ToLower(filepath.Ext(path))]
		if !ok || !d.Type().IsRegular() {
			return nil
		}
		if len(idx.Files) >= MaxFiles {
			return errTooMany
		}
		defs, err := scanDefs(path, lang.defs)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(abs, path)
		idx.Files = append(idx.Files, File{Path: filepath.ToSlash(rel), Language: lang.name, Functions: defs})
		return nil
	})
	if err != nil && !errors.Is(err, errTooMany) {
		return nil, err
	}
	return idx, nil
}

func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor" || name == "__pycache__"
}

func scanDefs(path string, re *regexp.Regexp) ([]Def, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("%s: skipped (unreadable or larger than %d bytes)", path, MaxFileSize)
	}
	var defs []Def
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), MaxFileSize)
	for line := 1; sc.Scan(); line++ {
		for _, m := range re.FindAllStringSubmatch(sc.Text(), -1) {
			defs = append(defs, Def{Name: m[1], Line: line})
		}
	}
	return defs, sc.Err()
}
