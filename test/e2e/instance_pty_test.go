package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

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

	err := term.exited(cmd, 60*time.Second, "the CLI did not finish")
	assert.NilError(t, err, "the CLI failed; the terminal shows:\n%q", term.text())
	term.waitShows(`Instance "db" is ready`)

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

// TestInstance_WaitInterruptedByCtrlC_InAPseudoTerminal: Ctrl-C typed while "provision
// --wait" follows an asynchronous provision exits 130, saying that the command was
// interrupted and where it left the instance, without Go's error text.
func TestInstance_WaitInterruptedByCtrlC_InAPseudoTerminal(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	e.b.SetAsyncDelay(time.Hour)
	cmd, term := instStartInPTY(t, e.ns, "provision", "db", "--class", "postgresql", "--plan", "standard", "--wait", "--interval", "200ms")
	term.waitShows("the broker is")

	_, err := term.pty.Write([]byte{0x03}) // Ctrl-C
	assert.NilError(t, err)
	_ = term.exited(cmd, 30*time.Second, "the CLI did not end after Ctrl-C")
	assert.Equal(t, cmd.ProcessState.ExitCode(), 130, "the terminal shows:\n%q", term.text())
	term.waitShows(`interrupted: instance "db" is left pending: follow it with "kubectl catalog describe instance db -n ` + e.ns + `"`)
	assert.Check(t, !strings.Contains(term.text(), "context canceled"), "the terminal shows:\n%q", term.text())
}
