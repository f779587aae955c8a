// Package configdb is demod's settings database (_config.db). Writes wait
// for another process's write lock with their own bounded retry loop, so
// the wait is logged the moment it starts instead of hidden in busy_timeout.
package configdb

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"modernc.org/sqlite"

	"github.com/reproboard/reproboard/examples/demod/internal/logx"
)

// BusyBudget bounds how long one statement waits for another writer.
const BusyBudget = 3 * time.Second

const retryEvery = 25 * time.Millisecond

// DB is the settings database.
type DB struct {
	db     *sql.DB
	log    *logx.Logger
	budget time.Duration
}

// Open opens (creating if needed) the settings database at path.
func Open(path string, log *logx.Logger) (*DB, error) {
	q := url.Values{}
	// busy_timeout(0): SQLite must report BUSY at once so retry() can log it.
	q.Add("_pragma", "busy_timeout(0)")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	d := &DB{db: db, log: log, budget: BusyBudget}
	err = d.retry("schema", func() error {
		_, err := db.Exec(`CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)`)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// Close closes the database.
func (d *DB) Close() error { return d.db.Close() }

// Set stores key=value, waiting up to BusyBudget for another writer.
func (d *DB) Set(key, value string) error {
	return d.retry(key, func() error {
		_, err := d.db.Exec(`INSERT INTO settings(key, value) VALUES(?, ?)
			ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value)
		return err
	})
}

// Get returns the value of key, if set.
func (d *DB) Get(key string) (string, bool, error) {
	var v string
	err := d.retry(key, func() error {
		return d.db.QueryRow(`SELECT value FROM settings WHERE key = ?`, key).Scan(&v)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return v, err == nil, err
}

// retry runs op until it is not busy or the budget is spent.
func (d *DB) retry(what string, op func() error) error {
	start := time.Now()
	waiting := false
	for attempt := 1; ; attempt++ {
		err := op()
		if !IsBusy(err) {
			if waiting {
				d.log.Info("config_db.busy_resolved", "key", what, "waited_ms", time.Since(start).Milliseconds(), "attempts", attempt)
			}
			return err
		}
		if !waiting {
			waiting = true
			d.log.Warn("config_db.busy_wait", "key", what, "budget_ms", d.budget.Milliseconds(), "err", err)
		}
		if time.Since(start) >= d.budget {
			d.log.Error("config_db.busy_gave_up", "key", what, "waited_ms", time.Since(start).Milliseconds(), "attempts", attempt)
			return fmt.Errorf("settings database stayed locked by another writer for %s: %w", d.budget, err)
		}
		time.Sleep(retryEvery)
	}
}

// IsBusy reports whether err is SQLite's "another connection holds the lock".
func IsBusy(err error) bool {
	if err == nil {
		return false
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
			return true
		}
	}
	return strings.Contains(err.Error(), "database is locked")
}
