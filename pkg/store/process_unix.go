//go:build unix

package store

import (
	"errors"
	"syscall"
)

// processSignalGone reports whether no process has the pid: signal 0 is refused with
// ESRCH. A process of another user (EPERM) is alive.
func processSignalGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
