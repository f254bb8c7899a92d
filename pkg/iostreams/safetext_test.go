package iostreams

import (
	"bytes"
	"testing"
)

func TestSafeText_EscapesControlCharactersVisibly(t *testing.T) {
	for _, tc := range []struct{ in, text, line string }{
		{"plain name-1.2_x", "plain name-1.2_x", "plain name-1.2_x"},
		{"héllo, 世界", "héllo, 世界", "héllo, 世界"},
		{"\x1b[2J\x1b]0;title\x07gold", `^[[2J^[]0;title\x07gold`, `^[[2J^[]0;title\x07gold`},
		{"a\rb", `a\rb`, `a\rb`},
		{"two\nlines\tand a tab", "two\nlines\tand a tab", `two\nlines\tand a tab`},
		{"del\x7f nul\x00", `del\x7f nul\x00`, `del\x7f nul\x00`},
		{"csi \u009b31m", `csi \u009b31m`, `csi \u009b31m`},
		{"rtl \u202egnp.exe", `rtl \u202egnp.exe`, `rtl \u202egnp.exe`},
		{"isolate \u2066x\u2069", `isolate \u2066x\u2069`, `isolate \u2066x\u2069`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`, `bad \xff\xfe utf8`},
		{"sep\u2028x", `sep\u2028x`, `sep\u2028x`},
	} {
		if got := SafeText(tc.in); got != tc.text {
			t.Errorf("SafeText(%q) = %q, want %q", tc.in, got, tc.text)
		}
		if got := SafeLine(tc.in); got != tc.line {
			t.Errorf("SafeLine(%q) = %q, want %q", tc.in, got, tc.line)
		}
		// Escaping is idempotent: what is printed twice reads the same.
		if got := SafeLine(SafeLine(tc.in)); got != tc.line {
			t.Errorf("SafeLine twice (%q) = %q", tc.in, got)
		}
	}
}

func TestSafeWriter(t *testing.T) {
	var b bytes.Buffer
	n, err := SafeWriter{W: &b}.Write([]byte("a\x1b[31mred\n"))
	if err != nil || n != len("a\x1b[31mred\n") {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if b.String() != "a^[[31mred\n" {
		t.Fatalf("got %q", b.String())
	}
}
