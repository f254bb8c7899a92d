package store

import (
	"os"
	"strconv"
	"strings"
)

// processStart reads the start time of process pid (clock ticks since boot, the 22nd
// field of /proc/PID/stat) and whether it is a zombie; "" when it cannot be read.
func processStart(pid int) (start string, zombie bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	// The command name (field 2) is in parentheses and may hold spaces or parentheses:
	// the fields after it are counted from the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return "", false
	}
	return f[19], f[0] == "Z" || f[0] == "X"
}

// bootID identifies the running boot.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// pidNamespace identifies this process's pid namespace, e.g. "pid:[4026531836]".
func pidNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return ns
}
