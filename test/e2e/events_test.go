package e2e

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// A provision leaves Events about the instance's ConfigMap that the real kubectl lists.
func TestEvents_ProvisionLeavesEventsOnTheRecord(t *testing.T) {
	ns, _, _ := instSetup(t)

	r := instCatalog(t, ns, "provision", "db", "--class", "postgresql", "--plan", "hobby", "-p", "storage_gb=5")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	r = kubectl(t, controlplane.AdminUser, "get", "events", "-n", ns,
		"--field-selector", "involvedObject.name=catalog-instance.db",
		"-o", "custom-columns=REASON:.reason,TYPE:.type,CONTROLLER:.reportingComponent,NOTE:.message")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "ProvisionRequested"))
	assert.Assert(t, is.Contains(r.Stdout, "ProvisionSucceeded"))
	assert.Assert(t, is.Contains(r.Stdout, "kubectl-catalog"))
}
