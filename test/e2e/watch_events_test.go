package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/poll"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// rowsOf are the output's lines naming name.
func rowsOf(out, name string) []string {
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == name {
			rows = append(rows, l)
		}
	}
	return rows
}

// get instances -w prints the rows of an instance provisioned asynchronously by another
// process as it goes from Provisioning to Ready, then ends on Ctrl-C with exit code 0.
func TestWatchEvents_GetInstancesWatchShowsProvisioningThenReady(t *testing.T) {
	t.Parallel()
	ns, b, _ := instSetup(t)
	b.SetAsyncDelay(4 * time.Second)

	w := startCatalog(t, ns, "get", "instances", "-w")
	// Nothing yet: a watch with no rows prints nothing until the first change.
	r := instCatalog(t, ns, "provision", "db", "--class", "postgresql", "--plan", "standard", "--wait", "--timeout", "90s")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	w.waitOutput(t, "a Ready row for db", func(out string) bool {
		rows := rowsOf(out, "db")
		return len(rows) > 0 && strings.Contains(rows[len(rows)-1], "Ready")
	}, 60*time.Second)

	out := w.Stdout()
	assert.Equal(t, strings.Count(out, "NAME"), 1, "one header:\n%s", out)
	rows := rowsOf(out, "db")
	provisioning := -1
	for i, row := range rows {
		if strings.Contains(row, "Provisioning") && provisioning < 0 {
			provisioning = i
		}
	}
	assert.Assert(t, provisioning >= 0, "a Provisioning row before Ready:\n%s", out)
	assert.Assert(t, strings.Contains(rows[len(rows)-1], "standard"), "same columns: %q", rows[len(rows)-1])
	assert.Equal(t, w.interrupt(t), 0, "Ctrl-C ends -w with exit code 0")

	// A second watch lists first (the table), then prints the deletion's rows.
	w2 := startCatalog(t, ns, "get", "instances", "--watch")
	w2.waitOutput(t, "the table", func(out string) bool { return strings.Contains(out, "NAME") && len(rowsOf(out, "db")) == 1 }, 30*time.Second)
	r = instCatalog(t, ns, "deprovision", "db", "--yes", "--wait", "--timeout", "90s")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	w2.waitOutput(t, "rows of the deprovision", func(out string) bool { return len(rowsOf(out, "db")) >= 3 }, 30*time.Second)
	assert.Equal(t, w2.interrupt(t), 0)
}

// eventsOf lists the Events about a record's ConfigMap with the real kubectl, as
// "REASON TYPE NOTE" lines.
func eventsOf(t *testing.T, ns, configMap string) string {
	t.Helper()
	r := kubectl(t, controlplane.AdminUser, "get", "events", "-n", ns,
		"--field-selector", "involvedObject.name="+configMap,
		"-o", "custom-columns=REASON:.reason,TYPE:.type,CONTROLLER:.reportingComponent,NOTE:.message")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	return r.Stdout
}

// noCredentialIn checks that none of the broker's binding credentials (and none of the
// Secrets' values in ns) appears in text.
func noCredentialIn(t *testing.T, b *broker.Broker, ns, text string) {
	t.Helper()
	var values []string
	for _, bd := range b.Bindings() {
		for _, v := range bd.Credentials {
			if s := fmt.Sprint(v); len(s) >= 6 {
				values = append(values, s)
			}
		}
	}
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	secrets, err := admin.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{})
	assert.NilError(t, err)
	for _, s := range secrets.Items {
		for _, v := range s.Data {
			if len(v) >= 6 {
				values = append(values, string(v))
			}
		}
	}
	assert.Assert(t, len(values) > 0, "credentials to look for")
	for _, v := range values {
		assert.Assert(t, !strings.Contains(text, v), "a credential value is in an Event:\n%s", text)
	}
}

// A failed bind leaves BindRequested and BindFailed; an orphan mitigation leaves
// OrphanMitigationStarted and OrphanMitigationFinished; no Event holds a credential;
// describe shows them in its Events section.
func TestWatchEvents_FailedBindAndOrphanMitigationLeaveEvents(t *testing.T) {
	t.Parallel()
	ns, b, _ := instSetup(t)
	r := instCatalog(t, ns, "provision", "db", "--class", "postgresql", "--plan", "hobby", "-p", "storage_gb=5")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	// A binding whose credentials are looked for in every Event.
	r = instCatalog(t, ns, "bind", "db", "--name", "good")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	// A bind the broker refuses (400): terminal failure.
	_, err := b.InjectFault(broker.Fault{Op: broker.OpBind, When: broker.Before, Action: broker.ActionRespond, Status: 400,
		Error: "BadRequest", Description: "injected by the e2e test", Times: 1})
	assert.NilError(t, err)
	r = instCatalog(t, ns, "bind", "db", "--name", "bad")
	assert.Assert(t, r.ExitCode != 0, r.Stderr)
	evs := eventsOf(t, ns, "catalog-binding.bad")
	assert.Assert(t, is.Contains(evs, "BindRequested"))
	assert.Assert(t, is.Contains(evs, "BindFailed"))
	assert.Assert(t, is.Contains(evs, "injected by the e2e test"), "the broker's message")

	// A bind whose answer is unreadable: the broker may hold it, so it is mitigated
	// (unbound), then bound again under a new id.
	_, err = b.InjectFault(broker.Fault{Op: broker.OpBind, When: broker.After, Action: broker.ActionMalformed, Times: 1})
	assert.NilError(t, err)
	r = instCatalog(t, ns, "bind", "db", "--name", "app")
	assert.Assert(t, r.ExitCode != 0, r.Stderr)
	poll.WaitOn(t, func(poll.LogT) poll.Result {
		evs := eventsOf(t, ns, "catalog-binding.app")
		for _, want := range []string{"OrphanMitigationStarted", "OrphanMitigationFinished"} {
			if !strings.Contains(evs, want) {
				return poll.Continue("no %s yet:\n%s", want, evs)
			}
		}
		return poll.Success()
	}, poll.WithTimeout(slow(60*time.Second)), poll.WithDelay(500*time.Millisecond))
	evs = eventsOf(t, ns, "catalog-binding.app")
	assert.Assert(t, !strings.Contains(evs, "OrphanMitigationFailed"), evs)

	all := kubectl(t, controlplane.AdminUser, "get", "events", "-n", ns, "-o", "yaml")
	assert.Equal(t, all.ExitCode, 0, all.Stderr)
	noCredentialIn(t, b, ns, all.Stdout)

	// describe ends with the Events section.
	r = instCatalog(t, ns, "describe", "binding", "app")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "\nEvents:\n"))
	assert.Assert(t, is.Contains(r.Stdout, "OrphanMitigationStarted"))
	assert.Assert(t, is.Contains(r.Stdout, "kubectl-catalog, cli"))
}

// describe instance ends with the instance's Events, newest last; a user who may not
// list events is told so and still gets the rest.
func TestWatchEvents_DescribeInstanceShowsEvents(t *testing.T) {
	t.Parallel()
	ns, _, _ := instSetup(t)
	r := instCatalog(t, ns, "provision", "db", "--class", "postgresql", "--plan", "hobby", "-p", "storage_gb=5")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	r = instCatalog(t, ns, "describe", "instance", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	_, section, ok := strings.Cut(r.Stdout, "\nEvents:\n")
	assert.Assert(t, ok, r.Stdout)
	lines := strings.Split(strings.TrimSpace(section), "\n")
	assert.Assert(t, is.Contains(lines[0], "TYPE"))
	assert.Assert(t, is.Contains(lines[0], "FROM"))
	req, succ := strings.Index(section, "ProvisionRequested"), strings.Index(section, "ProvisionSucceeded")
	assert.Assert(t, req >= 0 && succ > req, "newest last:\n%s", section)
	assert.Assert(t, is.Contains(section, "kubectl-catalog"))
}
