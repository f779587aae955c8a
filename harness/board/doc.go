// Package board is the board model of reproboard: the pipeline that turns
// a `go test -json` run into a classified board. Each step is a plain
// function over plain data, testable without starting a process:
//
//	Collect/Collector  go test -json events -> *Results (sections, problems)
//	Classify           *Results + known_red -> *Board (outcomes, exit code)
//	Merge              shard *Boards -> *Board
//	Overall            several boards -> one exit code and why
//
// boards.yaml is read by package config; the reports (terminal, JSON,
// Markdown, HTML) are written by package report.
//
// A section is identified by its Go package import path and its full test
// name (TestRepro/issue581, as go test -json prints it). known_red entries
// name the test only: an entry applies to that test name in every package
// of the board.
//
// A section is a leaf test (one that ran no subtests); see SectionResult
// for the one exception. Sections skipped by a dry run or by sharding were
// not executed and appear nowhere on the board; other skips are listed
// and not counted.
package board
