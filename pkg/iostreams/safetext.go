package iostreams

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Text that others wrote reaches the terminal of whoever reads it: a broker's class and
// plan names and descriptions, a status message, an Event's note, a record written by
// any ConfigMap writer of a namespace. A terminal acts on the control bytes in it (ESC
// sequences move the cursor, rewrite earlier lines, set the window title, or hide what
// follows; a carriage return overwrites the line; bidirectional overrides reorder it),
// so every printer shows such text through SafeText or SafeLine, which escape control
// characters visibly, as kubectl does for object names.

// SafeText is s with every control character escaped visibly, newlines and tabs aside
// (multi-line text such as describe's output): ESC as "^[", any other as \xNN or
// \uNNNN, bidirectional formatting characters as \uNNNN, and bytes that are not UTF-8
// as \xNN.
func SafeText(s string) string { return escape(s, true) }

// SafeLine is SafeText for one line (a table cell, a name): newlines and tabs are
// escaped too ("\n", "\t").
func SafeLine(s string) string { return escape(s, false) }

func escape(s string, multiline bool) string {
	if isSafe(s, multiline) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			if multiline {
				b.WriteRune(r)
			} else if r == '\n' {
				b.WriteString(`\n`)
			} else {
				b.WriteString(`\t`)
			}
		case r == 0x1b:
			b.WriteString("^[")
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func isSafe(s string, multiline bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			// Slow path for anything beyond ASCII.
			for _, r := range s[i:] {
				if r == utf8.RuneError || unsafeRune(r) || r < 0x20 && !(multiline && (r == '\n' || r == '\t')) || r == 0x7f {
					return false
				}
			}
			return utf8.ValidString(s[i:])
		}
		if c == 0x7f || c < 0x20 && !(multiline && (c == '\n' || c == '\t')) {
			return false
		}
	}
	return true
}

// unsafeRune reports the characters beyond ASCII a terminal acts on, or that change how
// the rest of the line reads: C1 controls (CSI 0x9b among them), the line and paragraph
// separators, and the bidirectional formatting characters.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x2028 || r == 0x2029:
		return true
	case r == 0x061c || r == 0x200e || r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// SafeWriter escapes what is written through it with SafeText: for output assembled from
// others' text as a whole (describe, doctor). A write is escaped on its own, so a
// control sequence split over two writes is escaped in both halves.
type SafeWriter struct{ W io.Writer }

func (w SafeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.W, SafeText(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
