// Package store is demod's code graph: projects, their files and the
// functions in them, in a SQLite database in WAL mode.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // driver "sqlite"
)

// Options choose the WAL policy, which is where bug #581 lives.
type Options struct {
	// TruncateEvery > 0 (the #581 fix) trims the query log to its newest
	// QueryLogKeep rows and runs wal_checkpoint(TRUNCATE) after every that
	// many logged queries. 0 leaves only the passive checkpoint on close.
	TruncateEvery int
}

// QueryLogKeep is how many query_log rows the #581 fix keeps, so the
// database file plateaus along with the WAL.
const QueryLogKeep = 1000

// Store is the code-graph database.
type Store struct {
	db      *sql.DB
	logStmt *sql.Stmt // prepared once: the per-query insert is on the hot path
	path    string
	opts    Options
	queries atomic.Int64 // logged queries, for the periodic TRUNCATE
}

// Project is one indexed repository.
type Project struct {
	Name      string `json:"name"`
	Root      string `json:"root"`
	Files     int    `json:"files"`
	Functions int    `json:"functions"`
	IndexedAt string `json:"indexed_at"`
}

// Function is one function definition found by the indexer.
type Function struct {
	Project  string `json:"project"`
	Name     string `json:"name"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Language string `json:"language"`
}

// ErrUnknownProject is returned for a project that was never indexed.
var ErrUnknownProject = errors.New("unknown project")

const schema = `
CREATE TABLE IF NOT EXISTS projects (
	name TEXT PRIMARY KEY, root TEXT NOT NULL, indexed_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
	id INTEGER PRIMARY KEY, project TEXT NOT NULL, path TEXT NOT NULL, language TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS files_project ON files(project);
CREATE TABLE IF NOT EXISTS functions (
	project TEXT NOT NULL, file_id INTEGER NOT NULL, name TEXT NOT NULL, line INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS functions_project ON functions(project);
CREATE TABLE IF NOT EXISTS query_log (
	id INTEGER PRIMARY KEY, at TEXT NOT NULL, project TEXT NOT NULL, pattern TEXT NOT NULL, hits INTEGER NOT NULL);
`

// Open opens (creating if needed) the store at path.
func Open(path string, opts Options) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// Automatic checkpoints are off so query latency never pays for one;
	// see BUGS.md #581 for what that costs without the fix.
	q.Add("_pragma", "wal_autocheckpoint(0)")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	// One connection: the daemon is the only user, and it keeps checkpoints
	// from racing this process's own readers.
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	logStmt, err := db.Prepare(`INSERT INTO query_log(at, project, pattern, hits)
		VALUES(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?, ?, ?)`)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Store{db: db, logStmt: logStmt, path: path, opts: opts}, nil
}

// Close checkpoints (passively, as SQLite does on close) and closes.
func (s *Store) Close() error {
	s.logStmt.Close()
	return s.db.Close()
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// WALSize is the current size of the write-ahead log file in bytes.
func (s *Store) WALSize() int64 {
	fi, err := os.Stat(s.path + "-wal")
	if err != nil {
		return 0
	}
	return fi.Size()
}

// SaveProject replaces everything known about a project with idx.
func (s *Store) SaveProject(ctx context.Context, idx *Index) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, stmt := range []string{
		`DELETE FROM functions WHERE project = ?`,
		`DELETE FROM files WHERE project = ?`,
		`DELETE FROM projects WHERE name = ?`,
	} {
		if _, err := tx.ExecContext(ctx, stmt, idx.Project); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO projects(name, root, indexed_at) VALUES(?, ?, ?)`,
		idx.Project, idx.Root, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return err
	}
	for _, f := range idx.Files {
		res, err := tx.ExecContext(ctx, `INSERT INTO files(project, path, language) VALUES(?, ?, ?)`,
			idx.Project, f.Path, f.Language)
		if err != nil {
			return err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		for _, fn := range f.Functions {
			if _, err := tx.ExecContext(ctx, `INSERT INTO functions(project, file_id, name, line) VALUES(?, ?, ?, ?)`,
				idx.Project, id, fn.Name, fn.Line); err != nil {
				return err
			}
		}
	}
	return tx.Commit()
}

// Projects lists the indexed projects with their counts.
func (s *Store) Projects(ctx context.Context) ([]Project, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT p.name, p.root, p.indexed_at,
			(SELECT COUNT(*) FROM files f WHERE f.project = p.name),
			(SELECT COUNT(*) FROM functions fn WHERE fn.project = p.name)
		FROM projects p ORDER BY p.name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Project{}
	for rows.Next() {
		var p Project
		if err := rows.Scan(&p.Name, &p.Root, &p.IndexedAt, &p.Files, &p.Functions); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// Search returns up to limit functions of project (all projects when
// empty) whose name matches re, and the total number of matches.
func (s *Store) Search(ctx context.Context, project string, re *regexp.Regexp, limit int) ([]Function, int, error) {
	if project != "" {
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM projects WHERE name = ?`, project).Scan(&n); err != nil {
			return nil, 0, err
		}
		if n == 0 {
			return nil, 0, fmt.Errorf("%w: %s (index it first with index_repository)", ErrUnknownProject, project)
		}
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT fn.project, fn.name, f.path, fn.line, f.language
		FROM functions fn JOIN files f ON f.id = fn.file_id
		WHERE ? = '' OR fn.project = ?
		ORDER BY fn.project, f.path, fn.line`, project, project)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := []Function{}
	total := 0
	for rows.Next() {
		var fn Function
		if err := rows.Scan(&fn.Project, &fn.Name, &fn.File, &fn.Line, &fn.Language); err != nil {
			return nil, 0, err
		}
		if !re.MatchString(fn.Name) {
			continue
		}
		total++
		if len(out) < limit {
			out = append(out, fn)
		}
	}
	return out, total, rows.Err()
}

// LogQuery records a search in the query log, one commit (so one WAL frame
// or more) per query; with the fix on it truncates the WAL every
// TruncateEvery queries.
func (s *Store) LogQuery(ctx context.Context, project, pattern string, hits int) error {
	if _, err := s.logStmt.ExecContext(ctx, project, pattern, hits); err != nil {
		return err
	}
	n := s.queries.Add(1)
	if s.opts.TruncateEvery > 0 && n%int64(s.opts.TruncateEvery) == 0 {
		if _, err := s.db.ExecContext(ctx, `DELETE FROM query_log WHERE id <= (SELECT MAX(id) FROM query_log) - ?`, QueryLogKeep); err != nil {
			return err
		}
		return s.Checkpoint(ctx, "TRUNCATE")
	}
	return nil
}

// Checkpoint runs wal_checkpoint in the given mode (PASSIVE, TRUNCATE...).
func (s *Store) Checkpoint(ctx context.Context, mode string) error {
	var busy, logFrames, done int
	return s.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &logFrames, &done)
}
