// Package testio holds I/O helpers the project's tests share.
package testio

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that one goroutine (or a subprocess's copier) may
// write while another reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
