// Package config reads boards.yaml: the targets (how to get each program
// under test and what it reads from its environment), the boards (sets of
// Go test packages run and classified together) and the known-red
// whitelist. Load validates strictly and every error names file:line:col.
package config
