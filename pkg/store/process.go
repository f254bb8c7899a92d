package store

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
)

// Process identifies the process that wrote a claim, so that a claim left behind by a
// process that was killed can be told from one a live process holds (Process.Gone).
// Claims written by older releases carry none: they last until they expire.
type Process struct {
	// Host is the host name the process ran on.
	Host string `json:"host"`
	// PID is its process id there.
	PID int `json:"pid"`
	// Boot, PIDNamespace and Start pin the process down where the system tells them
	// (Linux): the boot it ran in, its pid namespace, and its start time in clock ticks
	// since boot. A pid of another boot or container, or a pid reused by a later
	// process, is then not mistaken for it.
	Boot         string `json:"boot,omitempty"`
	PIDNamespace string `json:"pidNamespace,omitempty"`
	Start        string `json:"start,omitempty"`
}

// self is this process, as the claims it writes name it.
var self = sync.OnceValue(func() *Process {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return nil
	}
	pid := os.Getpid()
	start, _ := processStart(pid)
	return &Process{Host: host, PID: pid, Boot: bootID(), PIDNamespace: pidNamespace(), Start: start}
})

// Gone reports whether p is a process of this host that has ended, so that nobody
// renews its claim any more: the same host name, and the same boot and pid namespace
// where both are known, and its pid is not alive (kill with signal 0 says there is no
// such process), or the process alive under that pid is not p (it started at another
// time, or it is a zombie). A process of another host or container, or one this
// process cannot tell about, is never gone, and neither is this process itself.
func (p *Process) Gone() bool { return p.goneTo(SystemProcesses()) }

// goneTo is Gone as the process of t judges it, by what t tells of the processes of its
// pid namespace.
func (p *Process) goneTo(t ProcessTable) bool {
	me := t.Self
	switch {
	case p == nil || me == nil || t.Running == nil || p.Host != me.Host || p.PID <= 0 || p.PID == me.PID:
		return false
	case p.Boot != "" && me.Boot != "" && p.Boot != me.Boot:
		// Another boot: its pids are not this boot's, and whether a pid is alive now
		// says nothing. Hosts reuse names (a pod recreated with its name) as well.
		return false
	case p.PIDNamespace != me.PIDNamespace:
		// Another container: its pids cannot be seen from here.
		return false
	}
	start, running := t.Running(p.PID)
	return !running || p.Start != "" && start != "" && start != p.Start
}

// Abandoned reports whether the claim's holder is a process of this host that has
// ended (see Process.Gone): nobody renews the claim, though it has not expired yet.
// Drivers ask their store's Claims (Claims.Abandoned), which judge as the store's
// process.
func (l Lease) Abandoned() bool { return l.Process.Gone() }

// A ProcessTable is what a process knows of processes: itself, as the claims it writes
// name it, and which processes run under the pids of its pid namespace. It is what
// judges whether the process named in another holder's claim has ended
// (Claims.Abandoned).
type ProcessTable struct {
	// Self is the process; nil when the system does not tell it (its claims then
	// name no process, and no claim is judged abandoned).
	Self *Process
	// Running reports whether a process runs under pid (one that has ended and not
	// been waited for, a zombie, does not), and its start time ("" when not known).
	Running func(pid int) (start string, running bool)
}

// SystemProcesses is this process's ProcessTable as the system tells it: signal 0
// to a pid, and on Linux /proc/PID/stat.
func SystemProcesses() ProcessTable { return ProcessTable{Self: self(), Running: systemRunning} }

// systemRunning is ProcessTable.Running as the system tells it.
func systemRunning(pid int) (string, bool) {
	if processSignalGone(pid) {
		return "", false
	}
	start, zombie := processStart(pid)
	return start, !zombie
}

// HolderName names this process in claims: "prefix@host/pid.nonce". The nonce is drawn
// once per process, so the name is unique per process lifetime: a container restarted in
// the same Pod (the binary as PID 1, the host name the Pod's) is another holder than the
// process it replaces, and waits for that process's claim to expire instead of taking
// it for its own while the call that claim covers may still be under way at the broker.
func HolderName(prefix string) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s@%s/%d.%s", prefix, host, os.Getpid(), nonce())
}

// nonce is this process's holder nonce (HolderName).
var nonce = sync.OnceValue(func() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
})
