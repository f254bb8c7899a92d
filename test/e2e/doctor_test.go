package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/doctor"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// doctorRun runs "kubectl catalog doctor -n NS -o json" as the admin, with NS as the
// catalog namespace too, and returns its checks by name.
func doctorRun(t *testing.T, ns string) (map[string]doctor.Check, result) {
	t.Helper()
	r := instRun(t, ns, nil, "doctor", "-o", "json", "--broker-timeout", "3s", "--catalog-namespace", ns)
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
	t.Parallel()
	// A cluster broker, in a catalog namespace of the test's own: only administrators write
	// it, so doctor uses its credentials with or without the trust policy (it uses a
	// namespaced broker's only for an author the policy vouches for, docs/security.md).
	e := &instEnv{ns: cp.NewNamespace(t), b: broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p"})}
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	_, err = admin.CoreV1().Secrets(e.ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "broker-auth"}, StringData: map[string]string{"username": "u", "password": "p"},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	r := instCatalog(t, e.ns, "register", "acme", "--url", e.b.URL(), "--basic-auth-secret", "broker-auth", "--catalog-namespace", e.ns)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
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

	env := &catalogEnv{admin: admin}
	before := catalogSnapshot(t, env, e.ns)
	assert.NilError(t, e.b.Close())
	checks, r = doctorRun(t, e.ns)
	assert.Equal(t, r.ExitCode, 1, "a broker that does not answer is a failure")
	c = checks[brokerCheck]
	assert.Equal(t, c.Status, doctor.Fail, "%+v", c)
	assert.Assert(t, c.Fix != "", "a failed check says how to fix it")
	assert.DeepEqual(t, catalogSnapshot(t, env, e.ns), before)
}
