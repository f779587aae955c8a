package store

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// fixture writes a small multi-language repository and returns its root.
func fixture(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "shop")
	files := map[string]string{
		"cart/cart.go":       "package cart\n\nfunc AddItem() {}\n\nfunc (c *Cart) RemoveItem(id int) {}\n",
		"pay/pay.py":         "def charge(card):\n    pass\n\nasync def refund(x):\n    pass\n",
		"web/app.js":         "function render() {}\nconst x = function helper() {}\n",
		"README.md":          "func NotCode() {}\n",
		".git/hooks/hook.py": "def hidden():\n    pass\n",
		"node_modules/m.js":  "function vendored() {}\n",
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestIndexFindsFunctionsAndSkipsHiddenAndVendored(t *testing.T) {
	idx, err := IndexDir(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	if idx.Project != "shop" {
		t.Errorf("project = %q, want the directory's base name shop", idx.Project)
	}
	got := map[string]string{}
	for _, f := range idx.Files {
		for _, d := range f.Functions {
			got[d.Name] = f.Path
		}
	}
	want := map[string]string{
		"AddItem": "cart/cart.go", "RemoveItem": "cart/cart.go",
		"charge": "pay/pay.py", "refund": "pay/pay.py",
		"render": "web/app.js", "helper": "web/app.js",
	}
	if len(got) != len(want) {
		t.Errorf("indexed %v, want exactly %v", got, want)
	}
	for name, file := range want {
		if got[name] != file {
			t.Errorf("%s: found in %q, want %q", name, got[name], file)
		}
	}
}

func openStore(t *testing.T, opts Options) *Store {
	t.Helper()
	st, err := Open(filepath.Join(t.TempDir(), "store.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestSaveListSearch(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, Options{})
	idx, err := IndexDir(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	// Saving twice replaces, it does not duplicate.
	for range 2 {
		if err := st.SaveProject(ctx, idx); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := st.Projects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Name != "shop" || ps[0].Files != 3 || ps[0].Functions != 6 {
		t.Fatalf("projects = %+v, want shop with 3 files and 6 functions", ps)
	}
	fns, total, err := st.Search(ctx, "shop", regexp.MustCompile(`(?i)item$`), 1)
	if err != nil {
		t.Fatal(err)
	}
	if total != 2 || len(fns) != 1 || fns[0].Name != "AddItem" || fns[0].Line != 3 {
		t.Errorf("search = %+v total %d, want AddItem at line 3 of 2 matches", fns, total)
	}
	if _, _, err := st.Search(ctx, "nope", regexp.MustCompile(``), 10); err == nil {
		t.Error("searching an unknown project succeeded")
	}
}

// walAfter logs n queries and returns the WAL size.
func walAfter(t *testing.T, st *Store, n int) int64 {
	t.Helper()
	for range n {
		if err := st.LogQuery(context.Background(), "shop", "x", 1); err != nil {
			t.Fatal(err)
		}
	}
	return st.WALSize()
}

func TestWALGrowsWithoutTruncateAndPlateausWithIt(t *testing.T) {
	const page = 4096
	buggy := openStore(t, Options{})
	a, b := walAfter(t, buggy, 100), walAfter(t, buggy, 100)
	t.Logf("without the fix: WAL %d -> %d bytes over 100 queries (%d bytes/query)", a, b, (b-a)/100)
	if b-a < 100*page*9/10 {
		t.Errorf("without the fix the WAL should grow about a page per query: %d -> %d bytes over 100 queries", a, b)
	}
	fixed := openStore(t, Options{TruncateEvery: 50})
	var largest int64
	for range 8 {
		largest = max(largest, walAfter(t, fixed, 25))
	}
	t.Logf("with TRUNCATE every 50: WAL peaked at %d bytes", largest)
	if largest > 60*(page+24)+32 {
		t.Errorf("with TRUNCATE every 50 queries the WAL should stay under ~50 frames, peaked at %d bytes", largest)
	}
}

func TestFixTrimsTheQueryLog(t *testing.T) {
	st := openStore(t, Options{TruncateEvery: 50})
	walAfter(t, st, QueryLogKeep+500)
	var rows int
	if err := st.db.QueryRow(`SELECT COUNT(*) FROM query_log`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows > QueryLogKeep+50 {
		t.Errorf("query_log holds %d rows after %d queries, want at most %d", rows, QueryLogKeep+500, QueryLogKeep+50)
	}
}
