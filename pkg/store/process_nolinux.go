//go:build !linux

package store

// processStart cannot tell a process's start time here.
func processStart(int) (string, bool) { return "", false }

// bootID cannot tell the boot here.
func bootID() string { return "" }

// pidNamespace cannot tell the pid namespace here.
func pidNamespace() string { return "" }
