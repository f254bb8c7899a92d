package reconcile

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// cgroupMemoryMax is where a container's memory limit shows (cgroup v2).
var cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// setMemoryLimit gives the Go runtime a soft memory limit of 80% of the container's
// memory limit, unless GOMEMLIMIT is set or no limit applies: the garbage collector then
// works harder as the limit nears (a relist of a catalog of many megabytes) instead of
// the kernel killing the run. It returns the limit set, or 0.
func setMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	raw, err := os.ReadFile(cgroupMemoryMax)
	if err != nil {
		return 0
	}
	limit, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil || limit <= 0 { // "max": no limit
		return 0
	}
	soft := limit / 10 * 8
	debug.SetMemoryLimit(soft)
	return soft
}
