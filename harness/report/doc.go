// Package report writes a classified board (package board) for its
// readers: a terminal table, versioned JSON (and its reader, for merges),
// Markdown for a CI step summary, and one self-contained HTML page. Each
// writer is a plain function of the board.
package report
