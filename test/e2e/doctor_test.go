package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/doctor"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// doctorRun runs "kubectl catalog doctor -n NS -o json" as the admin and returns its
// checks by name.
func doctorRun(t *testing.T, ns string) (map[string]doctor.Check, result) {
	t.Helper()
	r := instRun(t, ns, nil, "doctor", "-o", "json", "--timeout", "3s")
	var rep doctor.Report
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &rep), r.Stderr)
	checks := map[string]doctor.Check{}
	for _, c := range rep.Checks {
		checks[c.Name] = c
	}
	return checks, r
}

// TestDoctor_OnTheRealControlPlane_ReportsABrokerGoingDown runs doctor against the
// real API server: the cluster and the admin's permissions check out, the registered
// broker answers; once the broker is gone, doctor fails, naming the broker and how to
// fix it, and changes nothing.
func TestDoctor_OnTheRealControlPlane_ReportsABrokerGoingDown(t *testing.T) {
	e := instSetupCatalog(t, nil)
	brokerCheck := "broker " + e.ns + "/acme"

	checks, _ := doctorRun(t, e.ns)
	assert.Equal(t, checks["cluster"].Status, doctor.OK, "%+v", checks["cluster"])
	assert.Assert(t, strings.Contains(checks["cluster"].Detail, "v1.37"), checks["cluster"].Detail)
	assert.Assert(t, strings.Contains(checks["identity"].Detail, "admin"), checks["identity"].Detail)
	c, ok := checks[brokerCheck]
	assert.Assert(t, ok, "no check of the broker in %v", checks)
	assert.Equal(t, c.Status, doctor.OK, "%+v", c)
	for name, c := range checks {
		if strings.HasPrefix(name, "rbac") {
			assert.Equal(t, c.Status, doctor.OK, "the admin may do everything: %+v", c)
		}
	}

	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	env := &catalogEnv{admin: admin}
	before := catalogSnapshot(t, env, e.ns)
	assert.NilError(t, e.b.Close())
	checks, r := doctorRun(t, e.ns)
	assert.Equal(t, r.ExitCode, 1, "a broker that does not answer is a failure")
	c = checks[brokerCheck]
	assert.Equal(t, c.Status, doctor.Fail, "%+v", c)
	assert.Assert(t, c.Fix != "", "a failed check says how to fix it")
	assert.DeepEqual(t, catalogSnapshot(t, env, e.ns), before)
}
