// Package history is the board's memory: every run of a board is
// recorded in an embedded SQLite database (modernc.org/sqlite, pure Go, so
// nothing needs to be installed), and read back as plain data for the
// reports and the history and flaky commands.
//
//	FromBoard   *board.Board -> *Run (the record of one run)
//	Store       Record(*Run), Runs(Query) -> []*Run, oldest first
//	Analyze     []*Run of one board -> *Analysis (what changed, strips,
//	            flake rates, leak trends, suggestions)
//
// The database is one file: WAL and a busy timeout let several boards
// append at once; its schema is versioned (PRAGMA user_version) and
// migrated forward on open; a file that is not a reproboard history is
// refused with a message saying so, never written.
package history
