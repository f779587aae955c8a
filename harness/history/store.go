package history

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reproboard/reproboard/harness/outcome"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
)

// applicationID marks a SQLite file as a reproboard history ("RPBH"), so
// a foreign database is refused instead of being written into.
const applicationID = 0x52504248

// busyTimeout is how long a writer waits for another one to finish its
// transaction before it gives up; recording a run takes milliseconds.
const busyTimeout = 30 * time.Second

// migrations bring the schema from version i to i+1; the version is
// PRAGMA user_version. Append, never edit: a database written by this
// reproboard must open with every later one.
var migrations = []string{
	// 0 -> 1: runs, their sections and each section's leak measures.
	`CREATE TABLE runs (
		id          INTEGER PRIMARY KEY,
		board       TEXT    NOT NULL,
		time_ns     INTEGER NOT NULL,
		duration_s  REAL    NOT NULL,
		commit_sha  TEXT    NOT NULL,
		branch      TEXT    NOT NULL,
		commit_url  TEXT    NOT NULL,
		go_version  TEXT    NOT NULL,
		platform    TEXT    NOT NULL,
		target      TEXT    NOT NULL,
		target_hash TEXT    NOT NULL,
		exit_code   INTEGER NOT NULL
	);
	CREATE INDEX runs_by_board ON runs (board, id);
	CREATE TABLE sections (
		run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
		seq        INTEGER NOT NULL,
		package    TEXT    NOT NULL,
		test       TEXT    NOT NULL,
		outcome    TEXT    NOT NULL,
		reason     TEXT    NOT NULL,
		issue      INTEGER NOT NULL,
		duration_s REAL    NOT NULL,
		attempts   INTEGER NOT NULL,
		PRIMARY KEY (run_id, seq)
	) WITHOUT ROWID;
	CREATE INDEX sections_by_test ON sections (test, run_id);
	CREATE TABLE measures (
		run_id      INTEGER NOT NULL,
		seq         INTEGER NOT NULL,
		n           INTEGER NOT NULL,
		metric      TEXT    NOT NULL,
		unit        TEXT    NOT NULL,
		slope       REAL,
		budget      TEXT    NOT NULL,
		sensitivity REAL,
		verdict     TEXT    NOT NULL,
		PRIMARY KEY (run_id, seq, n),
		FOREIGN KEY (run_id, seq) REFERENCES sections (run_id, seq) ON DELETE CASCADE
	) WITHOUT ROWID;`,
}

// Version is the schema version this reproboard writes.
var Version = len(migrations)

// Keep is the retention of a board's runs: the newest Runs runs, and none
// older than Age; a zero field does not limit.
type Keep struct {
	Runs int
	Age  time.Duration
}

// Query selects runs: of one board (every board when empty), the newest
// Limit (all when 0), holding only the sections whose test is in Tests
// (all when empty).
type Query struct {
	Board string
	Tests []string
	Limit int
	// NoMeasures leaves the leak measures out: a listing of runs and
	// outcomes reads half the rows.
	NoMeasures bool
}

// Store is a history database. It is safe for concurrent use, and several
// processes may hold the same file open and record at once.
type Store struct {
	db   *sql.DB
	path string
}

// Open opens the history at path, creating it (and its directory) if it
// does not exist and migrating its schema to Version. A file that is not a
// SQLite database, another program's database, or one written by a newer
// reproboard is an error that says which.
func Open(path string) (*Store, error) {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("history %s: %v", path, err)
		}
	}
	q := url.Values{}
	// busy_timeout first: the pragmas after it may already wait for a lock.
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate") // a writer takes the lock at BEGIN: no upgrade deadlock between two
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("history %s: %v", path, err)
	}
	s := &Store{db: db, path: path}
	if err := s.init(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Path is the file the store was opened on.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) unusable(why string, err error) error {
	if err != nil {
		why += ": " + err.Error()
	}
	return fmt.Errorf("history %s is unusable: %s; move it away (a new history starts) or point history: / --history at another file", s.path, why)
}

// readError tells a damaged file (refuse it, say what to do) from a
// failure to reach it (a lock held past the busy timeout, permissions).
func (s *Store) readError(err error) error {
	msg := err.Error()
	if strings.Contains(msg, "not a database") || strings.Contains(msg, "malformed") || strings.Contains(msg, "corrupt") {
		return s.unusable("not a SQLite database, or a damaged one", err)
	}
	return fmt.Errorf("history %s: cannot read it: %v", s.path, err)
}

func (s *Store) init() error {
	ctx := context.Background()
	var app, version int
	if err := s.db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return s.readError(err)
	}
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return s.readError(err)
	}
	if app != applicationID && app != 0 {
		return s.unusable(fmt.Sprintf("a SQLite database of another program (application_id %#x, want %#x)", app, applicationID), nil)
	}
	if app == 0 {
		var tables int
		if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
			return s.readError(err)
		}
		if tables > 0 {
			return s.unusable(fmt.Sprintf("a SQLite database of another program (%d schema objects, no reproboard application_id)", tables), nil)
		}
	}
	if version > Version {
		return fmt.Errorf("history %s has schema version %d, written by a newer reproboard (this one knows up to %d); upgrade reproboard or use another file", s.path, version, Version)
	}
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return s.unusable("cannot switch it to WAL", err)
	}
	if version == Version {
		return nil
	}
	return s.migrate(ctx)
}

// migrate applies the missing migrations in one write transaction; a
// concurrent opener waits on the lock and then finds the work done.
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.unusable("cannot lock it to migrate", err)
	}
	defer tx.Rollback()
	var app, version int
	if err := tx.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return s.unusable("not a SQLite database", err)
	}
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return s.unusable("cannot read its schema version", err)
	}
	if app != 0 && app != applicationID {
		return s.unusable(fmt.Sprintf("a SQLite database of another program (application_id %#x)", app), nil)
	}
	for v := version; v < Version; v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("history %s: migrating the schema from version %d to %d: %v", s.path, v, v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id=%d; PRAGMA user_version=%d", applicationID, Version)); err != nil {
		return fmt.Errorf("history %s: %v", s.path, err)
	}
	return tx.Commit()
}

// Record appends a run in one transaction, then drops the board's runs
// that keep no longer holds. It sets r.ID.
func (s *Store) Record(ctx context.Context, r *Run, keep Keep) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history %s: recording board %s: %v", s.path, r.Board, err)
	}
	defer tx.Rollback()
	fail := func(err error) error {
		return fmt.Errorf("history %s: recording board %s: %v", s.path, r.Board, err)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO runs (board, time_ns, duration_s, commit_sha, branch, commit_url, go_version, platform, target, target_hash, exit_code)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.Board, r.Time.UnixNano(), r.Duration, r.Commit, r.Branch, r.CommitURL, r.GoVersion, r.Platform, r.Target, r.TargetHash, r.ExitCode)
	if err != nil {
		return fail(err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return fail(err)
	}
	secStmt, err := tx.PrepareContext(ctx, `INSERT INTO sections (run_id, seq, package, test, outcome, reason, issue, duration_s, attempts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fail(err)
	}
	defer secStmt.Close()
	mStmt, err := tx.PrepareContext(ctx, `INSERT INTO measures (run_id, seq, n, metric, unit, slope, budget, sensitivity, verdict) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fail(err)
	}
	defer mStmt.Close()
	for i, sec := range r.Sections {
		if _, err := secStmt.ExecContext(ctx, id, i, sec.Package, sec.Test, string(sec.Outcome), sec.Reason, sec.Issue, sec.Duration, sec.Attempts); err != nil {
			return fail(err)
		}
		for n, m := range sec.Measures {
			if _, err := mStmt.ExecContext(ctx, id, i, n, m.Metric, m.Unit, nullable(m.Slope), m.Budget, nullable(m.Sensitivity), string(m.Verdict)); err != nil {
				return fail(err)
			}
		}
	}
	if err := prune(ctx, tx, r.Board, keep, r.Time); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	r.ID = id
	return nil
}

func prune(ctx context.Context, tx *sql.Tx, boardName string, keep Keep, now time.Time) error {
	var cond []string
	var args []any
	if keep.Runs > 0 {
		cond = append(cond, "id NOT IN (SELECT id FROM runs WHERE board = ? ORDER BY id DESC LIMIT ?)")
		args = append(args, boardName, keep.Runs)
	}
	if keep.Age > 0 {
		cond = append(cond, "time_ns < ?")
		args = append(args, now.Add(-keep.Age).UnixNano())
	}
	if len(cond) == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, "DELETE FROM runs WHERE board = ? AND ("+strings.Join(cond, " OR ")+")", append([]any{boardName}, args...)...)
	return err
}

func nullable(f *float64) any {
	if f == nil || math.IsNaN(*f) || math.IsInf(*f, 0) {
		return nil
	}
	return *f
}

// Boards lists the boards that have runs, by name.
func (s *Store) Boards(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT DISTINCT board FROM runs ORDER BY board")
	if err != nil {
		return nil, fmt.Errorf("history %s: %v", s.path, err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}

// Runs reads the runs q selects, oldest first, with their sections in
// the order they were recorded.
func (s *Store) Runs(ctx context.Context, q Query) ([]*Run, error) {
	fail := func(err error) ([]*Run, error) { return nil, fmt.Errorf("history %s: %v", s.path, err) }
	// One read transaction: a writer appending meanwhile cannot make the
	// sections disagree with the runs.
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	where, args := "1", []any{}
	if q.Board != "" {
		where, args = "board = ?", append(args, q.Board)
	}
	limit := -1
	if q.Limit > 0 {
		limit = q.Limit
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, board, time_ns, duration_s, commit_sha, branch, commit_url, go_version, platform, target, target_hash, exit_code
		FROM runs WHERE `+where+` ORDER BY id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return fail(err)
	}
	var runs []*Run
	byID := map[int64]*Run{}
	for rows.Next() {
		r := &Run{Sections: []Section{}}
		var ns int64
		if err := rows.Scan(&r.ID, &r.Board, &ns, &r.Duration, &r.Commit, &r.Branch, &r.CommitURL, &r.GoVersion, &r.Platform, &r.Target, &r.TargetHash, &r.ExitCode); err != nil {
			rows.Close()
			return fail(err)
		}
		r.Time = time.Unix(0, ns).UTC()
		runs = append(runs, r)
		byID[r.ID] = r
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	if len(runs) == 0 {
		return runs, nil
	}
	for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
		runs[i], runs[j] = runs[j], runs[i]
	}
	lo := runs[0].ID
	secWhere, secArgs := "s.run_id >= ? AND s.run_id IN (SELECT id FROM runs WHERE "+where+")", append([]any{lo}, args...)
	if len(q.Tests) > 0 {
		secWhere += " AND s.test IN (" + strings.TrimSuffix(strings.Repeat("?,", len(q.Tests)), ",") + ")"
		for _, t := range q.Tests {
			secArgs = append(secArgs, t)
		}
	}
	srows, err := tx.QueryContext(ctx, `SELECT s.run_id, s.seq, s.package, s.test, s.outcome, s.reason, s.issue, s.duration_s, s.attempts
		FROM sections s WHERE `+secWhere+` ORDER BY s.run_id, s.seq`, secArgs...)
	if err != nil {
		return fail(err)
	}
	type key struct {
		run int64
		seq int
	}
	at := map[key][2]int{} // -> run index in runs... section index
	runIndex := map[int64]int{}
	for i, r := range runs {
		runIndex[r.ID] = i
	}
	for srows.Next() {
		var id int64
		var seq int
		var sec Section
		var out string
		if err := srows.Scan(&id, &seq, &sec.Package, &sec.Test, &out, &sec.Reason, &sec.Issue, &sec.Duration, &sec.Attempts); err != nil {
			srows.Close()
			return fail(err)
		}
		r, ok := byID[id]
		if !ok {
			continue
		}
		sec.Outcome = outcome.Outcome(out)
		at[key{id, seq}] = [2]int{runIndex[id], len(r.Sections)}
		r.Sections = append(r.Sections, sec)
	}
	srows.Close()
	if err := srows.Err(); err != nil {
		return fail(err)
	}
	if q.NoMeasures {
		return runs, nil
	}
	mrows, err := tx.QueryContext(ctx, `SELECT m.run_id, m.seq, m.metric, m.unit, m.slope, m.budget, m.sensitivity, m.verdict
		FROM sections s JOIN measures m ON m.run_id = s.run_id AND m.seq = s.seq WHERE `+secWhere+` ORDER BY m.run_id, m.seq, m.n`, secArgs...)
	if err != nil {
		return fail(err)
	}
	defer mrows.Close()
	for mrows.Next() {
		var id int64
		var seq int
		var m Measure
		var slope, sens sql.NullFloat64
		var verdict string
		if err := mrows.Scan(&id, &seq, &m.Metric, &m.Unit, &slope, &m.Budget, &sens, &verdict); err != nil {
			return fail(err)
		}
		pos, ok := at[key{id, seq}]
		if !ok {
			continue // a section the query left out
		}
		if slope.Valid {
			v := slope.Float64
			m.Slope = &v
		}
		if sens.Valid {
			v := sens.Float64
			m.Sensitivity = &v
		}
		m.Verdict = outcome.Outcome(verdict)
		sec := &runs[pos[0]].Sections[pos[1]]
		sec.Measures = append(sec.Measures, m)
	}
	if err := mrows.Err(); err != nil {
		return fail(err)
	}
	return runs, nil
}
