package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
)

// instTerminal is the CLI running in a pseudo-terminal, with everything it printed.
type instTerminal struct {
	t   *testing.T
	pty interface{ Write([]byte) (int, error) }
	// tty is the terminal's own end, kept open to see what the process has not read yet.
	tty *os.File
	// mu guards out and seen, and orders what is typed after the answers to the
	// process's cursor queries (see answer).
	mu   sync.Mutex
	out  bytes.Buffer
	seen int // how much of out the prompts answered so far consumed
}

func (p *instTerminal) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// answer waits until prompt appears (after what earlier answers consumed), then types
// keys.
func (p *instTerminal) answer(prompt, keys string) {
	p.t.Helper()
	deadline := time.Now().Add(slow(30 * time.Second))
	for {
		p.mu.Lock()
		i := strings.Index(p.out.String()[p.seen:], prompt)
		if i >= 0 {
			p.seen += i + len(prompt)
		}
		p.mu.Unlock()
		if i >= 0 {
			break
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("prompt %q did not appear; the terminal shows:\n%q", prompt, p.text())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Let the prompt finish drawing before typing.
	time.Sleep(200 * time.Millisecond)
	// A prompt that reads a line asks the terminal where the cursor is first, and
	// survey reads the answer with a buffer of its own that drops whatever came after
	// it in the same read: keys typed behind an answer the process has not read yet are
	// lost (on a busy machine, where the process is slow to read). So keys go only into
	// an empty input queue; an answer written after them comes after them, and what
	// precedes an answer survey keeps.
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.unread() > 0 {
		if time.Now().After(deadline) {
			p.t.Fatalf("the process did not read what the terminal answered it; the terminal shows:\n%q", p.out.String())
		}
		p.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		p.mu.Lock()
	}
	_, err := p.pty.Write([]byte(keys))
	assert.NilError(p.t, err)
}

// unread is how many bytes typed into the terminal the process has not read yet.
func (p *instTerminal) unread() int {
	n, err := unix.IoctlGetInt(int(p.tty.Fd()), unix.TIOCINQ)
	assert.NilError(p.t, err)
	return n
}

// instStartInPTY runs the plugin binary in a pseudo-terminal.
func instStartInPTY(t *testing.T, ns string, args ...string) (*exec.Cmd, *instTerminal) {
	t.Helper()
	return startInPTY(t, ns, nil, 160, args...)
}

// startInPTY runs the plugin binary in a pseudo-terminal of the given width (stdin,
// stdout and stderr), with extra environment. Cursor position queries (survey asks
// where the cursor is) are answered, as a terminal would.
func startInPTY(t *testing.T, ns string, env []string, cols uint16, args ...string) (*exec.Cmd, *instTerminal) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "kubectl-catalog"), append([]string{"-n", ns}, args...)...)
	cmd.Env = append(append(instEnviron(t), "TERM=xterm"), env...)
	f, tty, err := pty.Open()
	assert.NilError(t, err)
	assert.NilError(t, pty.Setsize(f, &pty.Winsize{Rows: 50, Cols: cols}))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	assert.NilError(t, cmd.Start())
	term := &instTerminal{t: t, pty: f, tty: tty}
	go func() {
		// Every query is answered, also two in one read (survey asks twice in a row,
		// and on a busy machine both arrive together) and one split between two reads.
		query := []byte("\x1b[6n")
		var tail []byte // the end of the last read: the start of a query, perhaps
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			if n > 0 {
				chunk := buf[:n]
				term.mu.Lock()
				term.out.Write(chunk)
				term.mu.Unlock()
				seen := append(tail, chunk...)
				term.mu.Lock()
				for range bytes.Count(seen, query) {
					_, _ = f.Write([]byte("\x1b[1;1R"))
				}
				term.mu.Unlock()
				tail = append([]byte(nil), seen[max(0, len(seen)-len(query)+1):]...)
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		_ = tty.Close()
		_ = f.Close()
		t.Logf("terminal output:\n%q", term.text())
	})
	return cmd, term
}

// exited waits for cmd, the process in the terminal, to exit and returns what cmd.Wait
// returned; past timeout (scaled by E2E_SLOW) it fails the test, saying notDone and
// what the terminal shows.
func (p *instTerminal) exited(cmd *exec.Cmd, timeout time.Duration, notDone string) error {
	p.t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(slow(timeout)):
		p.t.Fatalf("%s; the terminal shows:\n%q", notDone, p.text())
		return nil
	}
}

// waitShows waits until the terminal shows want: what the process wrote last may still
// be on its way through the pseudo-terminal to the reader when it has exited.
func (p *instTerminal) waitShows(want string) {
	p.t.Helper()
	instWaitFor(p.t, fmt.Sprintf("the terminal to show %q", want), 30*time.Second, func() bool {
		return strings.Contains(p.text(), want)
	})
}
