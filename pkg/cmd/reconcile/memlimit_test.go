package reconcile

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"gotest.tools/v3/assert"
)

func TestSetMemoryLimit_EightyPercentOfTheContainersLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	dir := t.TempDir()
	file := filepath.Join(dir, "memory.max")
	saved := cgroupMemoryMax
	cgroupMemoryMax = file
	t.Cleanup(func() { cgroupMemoryMax = saved })
	t.Setenv("GOMEMLIMIT", "")

	assert.NilError(t, os.WriteFile(file, []byte("268435456\n"), 0o600))
	assert.Equal(t, setMemoryLimit(), int64(214748360))
	assert.Equal(t, debug.SetMemoryLimit(-1), int64(214748360))

	debug.SetMemoryLimit(math.MaxInt64)
	assert.NilError(t, os.WriteFile(file, []byte("max\n"), 0o600))
	assert.Equal(t, setMemoryLimit(), int64(0), "no limit: nothing set")
	assert.NilError(t, os.Remove(file))
	assert.Equal(t, setMemoryLimit(), int64(0), "no cgroup file: nothing set")

	assert.NilError(t, os.WriteFile(file, []byte("268435456\n"), 0o600))
	t.Setenv("GOMEMLIMIT", "100MiB")
	assert.Equal(t, setMemoryLimit(), int64(0), "GOMEMLIMIT wins")
}
