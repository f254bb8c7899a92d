package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

func catalogNewEnv(t *testing.T) *catalogEnv {
	t.Helper()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	return &catalogEnv{catalogNS: cp.NewNamespace(t), userNS: cp.NewNamespace(t), admin: admin, st: store.New(admin, nil)}
}

func catalogAssertOK(t *testing.T, r result) {
	t.Helper()
	assert.Equal(t, r.ExitCode, 0, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
}

func TestCatalogBrokers_ClusterBrokerWithTLSAndBasicAuth_RegisterSyncDeregister(t *testing.T) {
	t.Parallel()
	e := catalogNewEnv(t)
	// A catalog namespace that does not exist yet: register creates it.
	e.catalogNS = "catalog-e2e-" + strings.ToLower(strings.ReplaceAll(e.userNS, "e2e-", ""))
	t.Cleanup(func() {
		_ = e.admin.CoreV1().Namespaces().Delete(context.Background(), e.catalogNS, metav1.DeleteOptions{})
	})
	tb := broker.NewTestBroker(t, broker.Options{TLS: true, Username: "admin", Password: "s3cret"})
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	assert.NilError(t, os.WriteFile(caFile, tb.CACertPEM(), 0o600))

	_, err := e.admin.CoreV1().Namespaces().Get(context.Background(), e.catalogNS, metav1.GetOptions{})
	assert.Assert(t, err != nil, "catalog namespace should not exist yet")

	// Without the CA, TLS fails: the broker is recorded with the error (in the catalog
	// namespace, now created) and the command says how to fix it.
	r := e.run(t, "register", "tls-acme", "--url", tb.URL())
	assert.Equal(t, r.ExitCode, 1)
	assert.Assert(t, is.Contains(r.Stderr, `broker "tls-acme" is registered, but cannot fetch the catalog`))
	assert.Assert(t, is.Contains(r.Stderr, "--ca-file"))
	_, err = e.admin.CoreV1().Namespaces().Get(context.Background(), e.catalogNS, metav1.GetOptions{})
	assert.NilError(t, err)
	b, err := e.st.Brokers().Get(context.Background(), e.catalogNS, "tls-acme")
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(b.Status.LastCatalogError, "certificate"))
	catalogAssertOK(t, e.run(t, "deregister", "tls-acme"))

	e.secret(t, e.catalogNS, "acme-auth", map[string]string{"username": "admin", "password": "s3cret"})
	r = e.run(t, "register", "tls-acme", "--url", tb.URL(), "--basic-auth-secret", "acme-auth", "--ca-file", caFile)
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, `broker "tls-acme" registered: 4 classes and 8 plans offered`))
	assert.Assert(t, is.Contains(r.Stderr, "Registering broker"))
	assert.Assert(t, !strings.Contains(r.Stdout+r.Stderr, "s3cret"))

	// Registering again is refused and changes nothing.
	before := catalogSnapshot(t, e, e.catalogNS)
	r = e.run(t, "register", "tls-acme", "--url", tb.URL(), "--basic-auth-secret", "acme-auth", "--ca-file", caFile)
	assert.Equal(t, r.ExitCode, 1)
	assert.Assert(t, is.Contains(r.Stderr, `already registered`))
	assert.DeepEqual(t, catalogSnapshot(t, e, e.catalogNS), before)

	// What users see.
	r = e.run(t, "marketplace")
	catalogAssertOK(t, r)
	for _, want := range []string{"CLASS", "postgresql", "hobby, standard, ha", "tls-acme", "redis", "object-storage", "log-drain"} {
		assert.Assert(t, is.Contains(r.Stdout, want))
	}
	r = e.run(t, "mp", "--class", "postgresql")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, "FREE"))
	assert.Assert(t, is.Contains(r.Stdout, "paid"))
	r = e.run(t, "get", "brokers")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, "Ready"))
	r = e.run(t, "get", "cl", "-b", "tls-acme", "-o", "name")
	catalogAssertOK(t, r)
	assert.Equal(t, strings.Count(r.Stdout, "\n"), 4)
	r = e.run(t, "get", "plans", "-c", "redis")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, "cache-large"))
	r = e.run(t, "get", "plans", "postgresql/hobby", "-o", "jsonpath={.items[0].spec.plans[0].id}")
	catalogAssertOK(t, r)
	assert.Equal(t, r.Stdout, broker.DemoPostgresHobbyPlanID)
	r = e.run(t, "describe", "plan", "postgresql/hobby")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, "Provision parameters:"))
	assert.Assert(t, is.Contains(r.Stdout, "REQUIRED"))
	r = e.run(t, "describe", "plan", "postgresql/hobby", "--show-schemas")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, `"properties"`))
	r = e.run(t, "describe", "broker", "tls-acme")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, `Basic, from secret "acme-auth"`))
	assert.Assert(t, is.Contains(r.Stdout, "CA bundle (1 certificates)"))
	r = e.run(t, "describe", "class", "postgresq")
	assert.Equal(t, r.ExitCode, 1)
	assert.Assert(t, is.Contains(r.Stderr, `did you mean "postgresql"`))

	// An instance (recorded directly: provisioning is another command's business) uses
	// redis and plan ha of postgresql.
	catalogInstance(t, e, "cache", broker.DemoRedisServiceID, broker.DemoRedisSmallPlanID)
	catalogInstance(t, e, "db", broker.DemoPostgresServiceID, broker.DemoPostgresHAPlanID)

	// The broker's catalog changes: postgresql is renamed and loses plan ha (used) and
	// standard (unused); redis (used) and log-drain (unused) vanish; a new class appears.
	cat := tb.Catalog()
	var next []osb.Service
	for _, s := range cat.Services {
		switch s.ID {
		case broker.DemoPostgresServiceID:
			s.Name = "postgres"
			s.Description = "PostgreSQL, renamed"
			s.Plans = []osb.Plan{*s.PlanByID(broker.DemoPostgresHobbyPlanID)}
			next = append(next, s)
		case broker.DemoObjectStorageServiceID:
			next = append(next, s)
		}
	}
	next = append(next, broker.GenerateCatalog(1, 2).Services[0])
	assert.NilError(t, tb.ReplaceCatalog(broker.Catalog{Services: next}))

	r = e.run(t, "sync", "broker", "tls-acme")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, `broker "tls-acme" synced: 3 classes and 5 plans offered`))
	assert.Assert(t, is.Contains(r.Stdout, "kept while instances use them"))

	cs := e.classes(t, e.catalogNS, "tls-acme")
	assert.Equal(t, len(cs), 4, "postgres, object-storage, the new class, and redis kept")
	pg := cs[broker.DemoPostgresServiceID]
	assert.Equal(t, pg.Spec.ExternalName, "postgres")
	assert.Assert(t, pg.PlanByID(broker.DemoPostgresStandardPlanID) == nil, "unused plan deleted")
	assert.Assert(t, pg.PlanRemoved(broker.DemoPostgresHAPlanID), "used plan kept, marked")
	assert.Assert(t, cs[broker.DemoRedisServiceID].Status.RemovedFromBroker)
	assert.Assert(t, cs[broker.DemoLogDrainServiceID] == nil)

	r = e.run(t, "marketplace")
	catalogAssertOK(t, r)
	assert.Assert(t, !strings.Contains(r.Stdout, "redis"), "removed classes are not offered")
	assert.Assert(t, !strings.Contains(r.Stdout, "ha"), "removed plans are not offered")
	r = e.run(t, "get", "classes")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, "Removed"))

	// A sync that fails leaves every class as it was.
	before = catalogSnapshot(t, e, e.catalogNS)
	_, err = tb.InjectFault(broker.Fault{Op: broker.OpCatalog, Action: broker.ActionRespond, Status: 500, Description: "database on fire"})
	assert.NilError(t, err)
	r = e.run(t, "sync", "broker", "tls-acme")
	assert.Equal(t, r.ExitCode, 1)
	assert.Assert(t, is.Contains(r.Stderr, "database on fire"))
	after := catalogSnapshot(t, e, e.catalogNS)
	for name, rv := range before {
		if strings.HasPrefix(name, "catalog-broker.") {
			continue
		}
		assert.Equal(t, after[name], rv, "%s changed", name)
	}
	r = e.run(t, "get", "brokers")
	assert.Assert(t, is.Contains(r.Stdout, "Failed"))

	// Deregister is refused while instances exist, then forced.
	r = e.run(t, "deregister", "tls-acme")
	assert.Equal(t, r.ExitCode, 1)
	// Both of this test's instances are named; a parallel test's instance of a cluster
	// broker of the same name (in its own catalog namespace) may be counted too.
	assert.Assert(t, is.Contains(r.Stderr, e.userNS+"/cache"))
	assert.Assert(t, is.Contains(r.Stderr, e.userNS+"/db"))
	assert.Equal(t, len(e.classes(t, e.catalogNS, "tls-acme")), 4)
	r = e.run(t, "deregister", "tls-acme", "--force")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, `broker "tls-acme" deregistered: 4 classes removed`))
	assert.DeepEqual(t, catalogSnapshot(t, e, e.catalogNS), map[string]string{})
}

// catalogInstance records an instance of a class directly in the store, and removes it
// (finalizer included) when the test ends.
func catalogInstance(t *testing.T, e *catalogEnv, name, classID, planID string) {
	t.Helper()
	ctx := context.Background()
	in, err := e.st.Instances().Create(ctx, &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.userNS, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: "tls-acme", ClassID: classID,
			ClassExternalName: "c", PlanID: planID, PlanExternalName: "p", ExternalID: name + "-id"},
	})
	assert.NilError(t, err)
	t.Cleanup(func() {
		_, _ = e.st.Instances().RemoveFinalizer(ctx, in)
		_ = e.st.Instances().Delete(ctx, in.Namespace, in.Name)
	})
}

func TestCatalogBrokers_NamespaceBrokerWithBearerToken_OnlyItsNamespaceSeesIt(t *testing.T) {
	t.Parallel()
	e := catalogNewEnv(t)
	other := cp.NewNamespace(t)
	tb := broker.NewTestBroker(t, broker.Options{BearerToken: "t0ken"})
	e.secret(t, e.userNS, "token", map[string]string{"token": "t0ken"})

	r := e.run(t, "register", "team", "--url", tb.URL(), "--scope", "namespace", "--bearer-token-secret", "token")
	catalogAssertOK(t, r)
	brk, err := e.st.Brokers().Get(context.Background(), e.userNS, "team")
	assert.NilError(t, err)
	assert.Equal(t, len(e.classes(t, e.userNS, "team")), 4)
	// Deleting the namespace keeps the broker and its credentials until its instances
	// are gone.
	assert.DeepEqual(t, brk.Finalizers, []string{store.Finalizer})
	token, err := e.admin.CoreV1().Secrets(e.userNS).Get(context.Background(), "token", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.DeepEqual(t, token.Finalizers, []string{store.BrokerSecretFinalizer})

	r = e.run(t, "marketplace", "-o", "json")
	catalogAssertOK(t, r)
	var list v1alpha1.ServiceClassList
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &list))
	assert.Equal(t, len(list.Items), 4)
	assert.Equal(t, list.Kind, "ServiceClassList")

	r = e.runAs(t, controlplane.AdminUser, other, "marketplace")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stderr, "No services are offered"))

	// A wrong token is a 401 with advice; the classes stay.
	_, err = e.admin.CoreV1().Secrets(e.userNS).Update(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.userNS, Name: "token"}, StringData: map[string]string{"token": "wrong"}}, metav1.UpdateOptions{})
	assert.NilError(t, err)
	r = e.run(t, "sync", "broker", "team")
	assert.Equal(t, r.ExitCode, 1)
	assert.Assert(t, is.Contains(r.Stderr, "401"))
	assert.Assert(t, is.Contains(r.Stderr, "check the credentials"))
	assert.Equal(t, len(e.classes(t, e.userNS, "team")), 4)

	r = e.run(t, "deregister", "team")
	catalogAssertOK(t, r)
	assert.Equal(t, len(e.classes(t, e.userNS, "team")), 0)
	_, err = e.st.Brokers().Get(context.Background(), e.userNS, "team")
	assert.Assert(t, store.IsNotFound(err), "deregistered, the broker is gone: %v", err)
	token, err = e.admin.CoreV1().Secrets(e.userNS).Get(context.Background(), "token", metav1.GetOptions{})
	assert.NilError(t, err, "the Secret stays")
	assert.Equal(t, len(token.Finalizers), 0)
}

func TestCatalogBrokers_RestrictionsAndAccessRulesShapeTheMarketplace(t *testing.T) {
	t.Parallel()
	e := catalogNewEnv(t)
	other := cp.NewNamespace(t)
	tb := broker.NewTestBroker(t, broker.Options{})
	r := e.run(t, "register", "acme", "--url", tb.URL(),
		"--class-restrictions", "name in (postgresql,redis,object-storage)", "--plan-restrictions", "free==true")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, "3 classes and 3 plans offered"))

	r = e.run(t, "marketplace", "-o", "wide")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, "hobby"))
	assert.Assert(t, !strings.Contains(r.Stdout, "standard"))
	assert.Assert(t, !strings.Contains(r.Stdout, "log-drain"))

	// kubectl get's list flags, against the real records: the selector goes to the API
	// server, the rows sort by a field of the records, without the header row.
	r = e.run(t, "get", "classes", "-l", "catalog.kubectl-catalog.io/class in (redis,postgresql)",
		"--sort-by", "{.spec.externalName}", "--no-headers")
	catalogAssertOK(t, r)
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	assert.Equal(t, len(lines), 2, r.Stdout)
	assert.Assert(t, strings.HasPrefix(lines[0], "postgresql "), r.Stdout)
	assert.Assert(t, strings.HasPrefix(lines[1], "redis "), r.Stdout)
	r = e.run(t, "marketplace", "-A")
	catalogAssertOK(t, r)
	assert.Assert(t, strings.HasPrefix(r.Stdout, "NAMESPACE "), r.Stdout)
	assert.Assert(t, is.Contains(r.Stdout, e.catalogNS), r.Stdout)
	r = e.run(t, "get", "classes", "-l", "=nope")
	assert.Equal(t, r.ExitCode, 2, r.Stderr)

	// Hide redis everywhere, then give it back to one namespace.
	r = e.runGlobal(t, "access", "disable", "redis", "-A", "--dry-run=server")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, "(server dry run)"), r.Stdout)
	r = e.run(t, "access", "list")
	catalogAssertOK(t, r)
	assert.Assert(t, !strings.Contains(r.Stdout, "redis"), "a server dry run stored an access rule: %s", r.Stdout)
	r = e.runGlobal(t, "access", "disable", "redis", "-A")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, `class "redis" disabled in every namespace`))
	r = e.run(t, "access", "enable", "redis", "--namespace", e.userNS)
	catalogAssertOK(t, r)
	r = e.run(t, "access", "disable", "postgresql/hobby", "--namespace", e.userNS)
	catalogAssertOK(t, r)

	r = e.run(t, "marketplace")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, "redis"))
	assert.Assert(t, !strings.Contains(r.Stdout, "postgresql"))
	r = e.runAs(t, controlplane.AdminUser, other, "marketplace")
	catalogAssertOK(t, r)
	assert.Assert(t, !strings.Contains(r.Stdout, "redis"))
	assert.Assert(t, is.Contains(r.Stdout, "postgresql"))

	r = e.run(t, "access", "list")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, "<all>"))
	assert.Assert(t, is.Contains(r.Stdout, "disabled"))
	r = e.run(t, "describe", "class", "postgresql")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, "Disabled here"))

	// Completion respects the rules too.
	r = kubectl(t, controlplane.AdminUser, "catalog", "__complete", "--catalog-namespace", e.catalogNS, "-n", e.userNS, "marketplace", "--class", "")
	catalogAssertOK(t, r)
	assert.Assert(t, is.Contains(r.Stdout, "redis"))
	assert.Assert(t, !strings.Contains(r.Stdout, "postgresql"))

	r = e.runGlobal(t, "access", "enable", "postgress", "-A")
	assert.Equal(t, r.ExitCode, 1)
	assert.Assert(t, is.Contains(r.Stderr, `did you mean "postgresql"`))
}

func TestCatalogBrokers_BadInputFailsClearlyAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := catalogNewEnv(t)
	good := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p"})
	e.secret(t, e.catalogNS, "auth", map[string]string{"username": "u", "password": "p"})
	e.secret(t, e.catalogNS, "nopass", map[string]string{"username": "u"})
	e.secret(t, e.catalogNS, "wrong", map[string]string{"username": "u", "password": "nope"})
	catalogAssertOK(t, e.run(t, "register", "good", "--url", good.URL(), "--basic-auth-secret", "auth"))

	faulty := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p"})
	dupCatalog := `{"services":[{"id":"x","name":"a","description":"d","bindable":true,"plans":[{"id":"p","name":"p","description":"d"}]},` +
		`{"id":"x","name":"b","description":"d","bindable":true,"plans":[{"id":"q","name":"q","description":"d"}]}]}`

	for _, tc := range []struct {
		name     string
		args     []string
		fault    *broker.Fault
		exit     int
		wantErr  []string
		recorded bool
	}{
		{name: "invalid name", args: []string{"register", "Bad_Name", "--url", faulty.URL()}, exit: 2,
			wantErr: []string{`"Bad_Name" is not a valid broker name`}},
		{name: "not http", args: []string{"register", "b1", "--url", "ftp://example.com"}, exit: 2,
			wantErr: []string{"must start with http:// or https://"}},
		{name: "both auth flags", args: []string{"register", "b1", "--url", faulty.URL(), "--basic-auth-secret", "a", "--bearer-token-secret", "b"}, exit: 2,
			wantErr: []string{"cannot be used together"}},
		{name: "bad restriction", args: []string{"register", "b1", "--url", faulty.URL(), "--plan-restrictions", "color==red"}, exit: 2,
			wantErr: []string{`"color", which is not a plan property`}},
		{name: "missing secret", args: []string{"register", "b1", "--url", faulty.URL(), "--basic-auth-secret", "absent"}, exit: 1,
			wantErr: []string{`secret "absent"`, "not found"}},
		{name: "secret lacks key", args: []string{"register", "b1", "--url", faulty.URL(), "--basic-auth-secret", "nopass"}, exit: 1,
			wantErr: []string{`secret "nopass"`, `no "password" key`}},
		{name: "401", args: []string{"register", "b1", "--url", faulty.URL(), "--basic-auth-secret", "wrong"}, exit: 1, recorded: true,
			wantErr: []string{"401", "check the credentials", `kubectl catalog sync broker b1`}},
		{name: "5xx", args: []string{"register", "b1", "--url", faulty.URL(), "--basic-auth-secret", "auth"}, exit: 1, recorded: true,
			fault: &broker.Fault{Op: broker.OpCatalog, Action: broker.ActionRespond, Status: 503}, wantErr: []string{"503"}},
		{name: "timeout", args: []string{"register", "b1", "--url", faulty.URL(), "--basic-auth-secret", "auth", "--broker-timeout", "1s"}, exit: 1, recorded: true,
			fault: &broker.Fault{Op: broker.OpCatalog, Action: broker.ActionHang}, wantErr: []string{"did not answer in time"}},
		{name: "malformed", args: []string{"register", "b1", "--url", faulty.URL(), "--basic-auth-secret", "auth"}, exit: 1, recorded: true,
			fault: &broker.Fault{Op: broker.OpCatalog, Action: broker.ActionMalformed}, wantErr: []string{"not valid JSON"}},
		{name: "oversized", args: []string{"register", "b1", "--url", faulty.URL(), "--basic-auth-secret", "auth"}, exit: 1, recorded: true,
			fault: &broker.Fault{Op: broker.OpCatalog, Action: broker.ActionOversized, Size: 65 << 20}, wantErr: []string{"size limit"}},
		{name: "duplicate ids", args: []string{"register", "b1", "--url", faulty.URL(), "--basic-auth-secret", "auth"}, exit: 1, recorded: true,
			fault: &broker.Fault{Op: broker.OpCatalog, Action: broker.ActionRespond, Status: 200, Body: dupCatalog}, wantErr: []string{`repeats id "x"`}},
		{name: "unreachable", args: []string{"register", "b1", "--url", "http://127.0.0.1:1"}, exit: 1, recorded: true,
			wantErr: []string{"check the URL"}},
		{name: "unknown broker", args: []string{"sync", "broker", "godo"}, exit: 1, wantErr: []string{`broker "godo" not found`, `did you mean "good"`}},
		{name: "unknown class", args: []string{"marketplace", "--class", "redsi"}, exit: 1, wantErr: []string{`did you mean "redis"`}},
		{name: "unknown plan", args: []string{"describe", "plan", "redis/cache-smal"}, exit: 1, wantErr: []string{`did you mean "cache-small"`}},
		{name: "bad output", args: []string{"get", "brokers", "-o", "xml"}, exit: 2, wantErr: []string{"xml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			faulty.ClearFaults()
			if tc.fault != nil {
				_, err := faulty.InjectFault(*tc.fault)
				assert.NilError(t, err)
			}
			before := catalogSnapshot(t, e, e.catalogNS)
			r := e.run(t, tc.args...)
			assert.Equal(t, r.ExitCode, tc.exit, "stderr: %s", r.Stderr)
			for _, w := range tc.wantErr {
				assert.Assert(t, is.Contains(r.Stderr, w))
			}
			after := catalogSnapshot(t, e, e.catalogNS)
			if tc.recorded {
				// The broker is recorded with its error; nothing else is written.
				b, err := e.st.Brokers().Get(context.Background(), e.catalogNS, "b1")
				assert.NilError(t, err)
				assert.Assert(t, b.Status.LastCatalogError != "")
				delete(after, store.ConfigMapName(v1alpha1.KindBroker, "b1"))
				assert.NilError(t, e.st.Brokers().Delete(context.Background(), e.catalogNS, "b1"))
			}
			assert.DeepEqual(t, after, before)
		})
	}
	assert.Equal(t, len(e.classes(t, e.catalogNS, "good")), 4)
}
