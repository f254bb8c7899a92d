package store

import (
	"crypto/sha256"
	"encoding/hex"

	"k8s.io/apimachinery/pkg/types"
)

// How the IDIndex keeps a record in little memory: the record's uid as 16 bytes, its
// name in a shared arena, its namespace as a number, and its fields in one slot of a
// chunked table (no copy of the whole table as it grows); the id labels and the uids
// map to a slot's position. About 150 bytes a record in all, against some 300 for
// strings and a map entry per field.

// idRec is a record the list held.
type idRec struct {
	created int64 // Unix seconds, as creationTimestamp has them
	uid     uidKey
	name    uint32 // nameArena position
	ns      uint32 // namespaceTable position
	nameLen uint8
	flags   uint8
}

const (
	// recBinding: a binding (else an instance).
	recBinding = 1 << iota
	// recLabelled: at least one of its OSB id labels is indexed.
	recLabelled
	// recMigrated: "migrate svcat" wrote it (AnnotationMigratedFrom) and it is not
	// being deleted; recMigratedAny: being deleted or not.
	recMigrated
	recMigratedAny
)

// maxIndexedName is the longest record name the index keeps (nameLen); a ConfigMap's
// name is at most 253 bytes.
const maxIndexedName = 255

// idRecs is a table of idRec in chunks of idRecChunk.
type idRecs struct {
	chunks [][]idRec
	n      int
}

const idRecChunk = 1024

func (t *idRecs) add(r idRec) uint32 {
	if t.n%idRecChunk == 0 {
		t.chunks = append(t.chunks, make([]idRec, 0, idRecChunk))
	}
	c := &t.chunks[len(t.chunks)-1]
	*c = append(*c, r)
	t.n++
	return uint32(t.n - 1)
}

func (t *idRecs) at(i uint32) *idRec { return &t.chunks[i/idRecChunk][i%idRecChunk] }

// nameArena holds names back to back in chunks of nameChunk bytes; a name's position is
// its chunk (high 16 bits) and its offset in it (low 16 bits).
type nameArena struct{ chunks [][]byte }

const nameChunk = 1 << 16

func (a *nameArena) add(s string) uint32 {
	if n := len(a.chunks); n == 0 || len(a.chunks[n-1])+len(s) > nameChunk {
		a.chunks = append(a.chunks, make([]byte, 0, nameChunk))
	}
	c := len(a.chunks) - 1
	off := len(a.chunks[c])
	a.chunks[c] = append(a.chunks[c], s...)
	return uint32(c)<<16 | uint32(off)
}

func (a *nameArena) get(at uint32, n uint8) string {
	off := int(at & 0xffff)
	return string(a.chunks[at>>16][off : off+int(n)])
}

// namespaceTable numbers the namespaces.
type namespaceTable struct {
	names []string
	at    map[string]uint32
}

func (t *namespaceTable) of(ns string) uint32 {
	if i, ok := t.at[ns]; ok {
		return i
	}
	if t.at == nil {
		t.at = map[string]uint32{}
	}
	ns = string([]byte(ns)) // not the listed object's string
	t.at[ns] = uint32(len(t.names))
	t.names = append(t.names, ns)
	return uint32(len(t.names) - 1)
}

func (t *namespaceTable) name(i uint32) string { return t.names[i] }

// uidKey is a uid as the index keeps it: the 16 bytes of a UUID in its canonical form
// (lower-case, as the API server makes every object's uid), or the first 16 bytes of the
// SHA-256 of any other uid (a fake cluster's), whose string the index keeps beside.
type uidKey [16]byte

// uuidDashes are the positions of the dashes of a UUID's canonical form.
var uuidDashes = [4]int{8, 13, 18, 23}

// uidKeyOf is uid's key.
func uidKeyOf(uid types.UID) uidKey {
	if k, ok := parseUUID(string(uid)); ok {
		return k
	}
	sum := sha256.Sum256([]byte(uid))
	var k uidKey
	copy(k[:], sum[:])
	return k
}

// parseUUID is the bytes of s, a UUID in canonical lower-case form.
func parseUUID(s string) (uidKey, bool) {
	var k uidKey
	if len(s) != 36 {
		return k, false
	}
	var hexed [32]byte
	j := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == uuidDashes[0] || i == uuidDashes[1] || i == uuidDashes[2] || i == uuidDashes[3] {
			if c != '-' {
				return k, false
			}
			continue
		}
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return k, false
		}
		hexed[j] = c
		j++
	}
	if _, err := hex.Decode(k[:], hexed[:]); err != nil {
		return k, false
	}
	return k, true
}

// keepUID is uid's key, remembering uid when it is not a UUID.
func (x *IDIndex) keepUID(uid types.UID) uidKey {
	k, ok := parseUUID(string(uid))
	if ok {
		return k
	}
	k = uidKeyOf(uid)
	if x.otherUIDs == nil {
		x.otherUIDs = map[uidKey]types.UID{}
	}
	x.otherUIDs[k] = types.UID(string([]byte(uid)))
	return k
}

// uidOf is the uid whose key is k.
func (x *IDIndex) uidOf(k uidKey) types.UID {
	if uid, ok := x.otherUIDs[k]; ok {
		return uid
	}
	var b [36]byte
	hex.Encode(b[0:8], k[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], k[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], k[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], k[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], k[10:16])
	return types.UID(string(b[:]))
}
