package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// instTerminal is the CLI running in a pseudo-terminal, with everything it printed.
type instTerminal struct {
	t    *testing.T
	pty  interface{ Write([]byte) (int, error) }
	mu   sync.Mutex
	out  bytes.Buffer
	seen int // how much of out the prompts answered so far consumed
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
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			if n > 0 {
				chunk := buf[:n]
				term.mu.Lock()
				term.out.Write(chunk)
				term.mu.Unlock()
				if bytes.Contains(chunk, []byte("\x1b[6n")) {
					_, _ = f.Write([]byte("\x1b[1;1R"))
				}
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

// instRequireParameter makes parameter name required in the create schema of plan id.
func instRequireParameter(t *testing.T, c *broker.Catalog, id, name string) {
	for i := range c.Services {
		for j := range c.Services[i].Plans {
			p := &c.Services[i].Plans[j]
			if p.ID != id {
				continue
			}
			create := p.Schemas.ServiceInstance.Create
			var s map[string]any
			assert.NilError(t, json.Unmarshal(create.Parameters, &s))
			s["required"] = []string{name}
			b, err := json.Marshal(s)
			assert.NilError(t, err)
			create.Parameters = b
			return
		}
	}
	t.Fatalf("no plan %s", id)
}

// TestInstance_InteractiveProvision_InAPseudoTerminal runs provision without --class,
// --plan or the plan's required parameter in a terminal, answers the three prompts, and
// checks the instance is created with the answers.
func TestInstance_InteractiveProvision_InAPseudoTerminal(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, func(c *broker.Catalog) {
		instRequireParameter(t, c, broker.DemoPostgresHobbyPlanID, "storage_gb")
	})
	cmd, term := instStartInPTY(t, e.ns, "provision", "db")

	// Select prompts filter on what is typed; Enter takes the first match.
	term.answer("Class:", "postgresql")
	term.answer("postgresql", "\r")
	term.answer("Plan:", "hobby")
	term.answer("hobby", "\r")
	term.answer("Parameter storage_gb:", "7\r")

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		assert.NilError(t, err, "the CLI failed; the terminal shows:\n%q", term.text())
	case <-time.After(slow(60 * time.Second)):
		t.Fatalf("the CLI did not finish; the terminal shows:\n%q", term.text())
	}
	// The process has exited; what it wrote last may still be on its way through the
	// pseudo-terminal to the reader.
	instWaitFor(t, "the terminal to show the result", 10*time.Second, func() bool {
		return strings.Contains(term.text(), `Instance "db" is ready`)
	})

	inst, err := e.st.Instances().Get(context.Background(), e.ns, "db")
	assert.NilError(t, err)
	assert.Equal(t, inst.Spec.ClassExternalName, "postgresql")
	assert.Equal(t, inst.Spec.PlanExternalName, "hobby")
	assert.Equal(t, string(inst.Spec.Parameters.Raw), `{"storage_gb":7}`)
	bi, ok := e.b.Instance(inst.Spec.ExternalID)
	assert.Assert(t, ok, "the broker holds the instance")
	assert.Equal(t, bi.PlanID, broker.DemoPostgresHobbyPlanID)
	assert.Equal(t, bi.Parameters["storage_gb"], float64(7))
}
