package reconcile

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Shard is part i (0-based) of n of the records.
type Shard struct{ I, N int }

// ParseShard parses "i/n" with 0 <= i < n.
func ParseShard(v string) (Shard, error) {
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("--shard %q: want i/n, e.g. 0/3", v)
	}
	if n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("--shard %q: want 0 <= i < n, e.g. 0/3, 1/3, 2/3", v)
	}
	return Shard{I: i, N: n}, nil
}

func (s Shard) String() string {
	if s.N <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// Owns reports whether namespace/name falls in the shard: a stable FNV-1a hash, so the
// same record always lands in the same shard, whichever CronJob lists it.
func (s Shard) Owns(namespace, name string) bool {
	if s.N <= 1 {
		return true
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace + "/" + name))
	return int(h.Sum32()%uint32(s.N)) == s.I
}
