package e2e

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"gotest.tools/v3/assert"
)

// instTerminal is the CLI running in a pseudo-terminal, with everything it printed.
type instTerminal struct {
	t    *testing.T
	pty  interface{ Write([]byte) (int, error) }
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
	_, err := p.pty.Write([]byte(keys))
	assert.NilError(p.t, err)
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
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: cols})
	assert.NilError(t, err)
	term := &instTerminal{t: t, pty: f}
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
				for range bytes.Count(seen, query) {
					_, _ = f.Write([]byte("\x1b[1;1R"))
				}
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
