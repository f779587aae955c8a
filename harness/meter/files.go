package meter

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// globSize is the total size of the regular files under base matching glob
// ("/"-separated, path.Match per segment, "**" for any number of
// directories). Symlinks are not followed.
//
// A glob that matches nothing is size 0 only when the directory its literal
// prefix names exists: an absent WAL after a truncating checkpoint is a real
// zero, but a missing directory is more likely a wrong base or a typo, so it
// is an error, never a silent 0.
func globSize(base, glob string) (int64, error) {
	if err := checkGlob(glob); err != nil {
		return 0, err
	}
	root := base
	if root == "" {
		root = "."
	}
	if strings.HasPrefix(glob, "/") {
		root = "/"
	}
	var segs []string
	for _, s := range strings.Split(glob, "/") {
		if s != "" && s != "." {
			segs = append(segs, s)
		}
	}
	if len(segs) == 0 {
		return 0, fmt.Errorf("glob %q names no file", glob)
	}
	// Descend through the literal prefix; the last segment stays a pattern so
	// that a literal file name that is absent still counts as 0 bytes.
	i := 0
	for i < len(segs)-1 && !hasMeta(segs[i]) {
		i++
	}
	root = filepath.Join(root, filepath.Join(segs[:i]...))
	pattern := segs[i:]
	st, err := os.Stat(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, fmt.Errorf("glob %q: directory %s does not exist (wrong base dir, or not created yet)", glob, root)
		}
		return 0, fmt.Errorf("glob %q: %v", glob, err)
	}
	if !st.IsDir() {
		return 0, fmt.Errorf("glob %q: %s is not a directory", glob, root)
	}
	var total int64
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != root {
				return nil // removed while we walked: a WAL truncated mid-sample
			}
			return err
		}
		rel, rerr := filepath.Rel(root, p)
		if rerr != nil || rel == "." {
			return rerr
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if d.IsDir() {
			if !couldMatchBelow(pattern, parts) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !matchSegs(pattern, parts) {
			return nil
		}
		info, ierr := d.Info()
		if ierr != nil {
			if errors.Is(ierr, fs.ErrNotExist) {
				return nil
			}
			return ierr
		}
		total += info.Size()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("glob %q under %s: %v", glob, root, err)
	}
	return total, nil
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// matchSegs matches path segments against pattern segments; "**" eats zero
// or more segments.
func matchSegs(p, s []string) bool {
	if len(p) == 0 {
		return len(s) == 0
	}
	if p[0] == "**" {
		return matchSegs(p[1:], s) || (len(s) > 0 && matchSegs(p, s[1:]))
	}
	if len(s) == 0 {
		return false
	}
	ok, _ := path.Match(p[0], s[0])
	return ok && matchSegs(p[1:], s[1:])
}

// couldMatchBelow says whether a file inside directory s could match p, so
// the walk skips directories that cannot.
func couldMatchBelow(p, s []string) bool {
	if len(s) == 0 || (len(p) > 0 && p[0] == "**") {
		return true
	}
	if len(p) <= 1 {
		return false // a directory must be followed by at least one more segment
	}
	ok, _ := path.Match(p[0], s[0])
	return ok && couldMatchBelow(p[1:], s[1:])
}
