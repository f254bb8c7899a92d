package cmd_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestApply_Broker_RegisteredThenUnchangedThenChanged(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.file(t, "broker.yaml", strings.Replace(otherBroker, "URL", w.url, 1))
	// An instance of the new broker's class: checked by its provision, once the catalog
	// is fetched.
	w.file(t, "my.yaml", mysqlInstance)

	out, errOut, code := w.run(t, "", "diff", "-f", w.dir)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(out, "+++ manifest/broker/other"), out)
	assert.Equal(t, w.calls.Load(), int32(0))

	out, errOut, code = w.run(t, "", "apply", "-f", w.dir)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "broker.catalog.kubectl-catalog.io/other created\nserviceinstance.catalog.kubectl-catalog.io/my created\n")
	b, err := w.c.Store().Brokers().Get(ctx, storetest.CatalogNamespace, "other")
	assert.NilError(t, err)
	assert.Equal(t, b.Spec.Auth.SecretRef.Name, "other-auth")
	assert.Assert(t, b.Status.LastCatalogFetch != nil, "the catalog was not fetched")
	cm, err := w.c.Core.CoreV1().ConfigMaps(storetest.CatalogNamespace).Get(ctx, "catalog-broker.other", metav1.GetOptions{})
	assert.NilError(t, err)
	for k, v := range cm.Data {
		assert.Assert(t, !strings.Contains(v, "hunter2"), "a credential copied into the record's %s", k)
	}
	inst, err := w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "my")
	assert.NilError(t, err)
	assert.Equal(t, inst.Spec.BrokerName, "other")

	// Again: unchanged, no broker call, no write.
	calls := w.calls.Load()
	w.c.Core.ClearActions()
	out, errOut, code = w.run(t, "", "apply", "-f", w.dir)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "broker.catalog.kubectl-catalog.io/other unchanged\nserviceinstance.catalog.kubectl-catalog.io/my unchanged\n")
	assert.Equal(t, w.calls.Load(), calls)
	assert.Equal(t, w.recordWrites(), 0)

	// As "get broker -o yaml" prints it: unchanged too.
	got, errOut, code := w.run(t, "", "get", "broker", "other", "-o", "yaml")
	assert.Equal(t, code, 0, errOut)
	out, errOut, code = w.run(t, got, "apply", "-f", "-")
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "broker.catalog.kubectl-catalog.io/other unchanged\n")

	// A new URL and relist interval: the broker is changed and its catalog fetched again.
	w.file(t, "broker.yaml", strings.Replace(otherBroker, "URL", w.url+"/osb", 1)+"  relistInterval: 1h\n")
	out, errOut, code = w.run(t, "", "diff", "-f", w.dir)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(out, "+  url: "+w.url+"/osb\n"), out)
	assert.Assert(t, is.Contains(out, "+  relistInterval: 1h0m0s\n"), out)
	out, errOut, code = w.run(t, "", "apply", "-f", w.dir)
	assert.Equal(t, code, 0, errOut)
	assert.Assert(t, is.Contains(out, "broker.catalog.kubectl-catalog.io/other configured\n"), out)
	b, err = w.c.Store().Brokers().Get(ctx, storetest.CatalogNamespace, "other")
	assert.NilError(t, err)
	assert.Equal(t, b.Spec.URL, w.url+"/osb")
	assert.Equal(t, b.Spec.RelistInterval.Duration, time.Hour)
}

func TestApply_Broker_BadOnesChangeNothing(t *testing.T) {
	for name, tc := range map[string]struct{ manifest, want string }{
		"missing Secret": {strings.Replace(otherBroker, "other-auth", "nosuch", 1), `"nosuch"`},
		"Secret of another namespace": {strings.Replace(otherBroker, "name: other-auth", "name: other-auth\n      namespace: dev", 1),
			"its own namespace"},
		"svcat, credentials outside the catalog namespace": {`apiVersion: servicecatalog.k8s.io/v1beta1
kind: ClusterServiceBroker
metadata:
  name: other
spec:
  url: URL
  authInfo:
    basic:
      secretRef:
        name: other-auth
        namespace: dev
`, `as "kubectl catalog migrate svcat" refuses it: its credentials are in Secret "other-auth" in namespace "dev"`},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			w.file(t, "a.yaml", instance("5"))
			w.file(t, "b.yaml", strings.Replace(tc.manifest, "URL", w.url, 1))
			w.c.Core.ClearActions()
			out, errOut, code := w.run(t, "", "apply", "-f", w.dir)
			assert.Equal(t, code, 1, errOut)
			assert.Assert(t, is.Contains(errOut, tc.want), errOut)
			assert.Equal(t, out, "")
			assert.Assert(t, is.Contains(errOut, "nothing was applied"), errOut)
			assert.Equal(t, w.calls.Load(), int32(0))
			assert.Equal(t, w.recordWrites(), 0)
		})
	}
}

func TestApply_SvcatServiceBroker_MapsItsFields(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	_, err := w.c.Core.CoreV1().Secrets(storetest.CatalogNamespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tok"},
		Data: map[string][]byte{"token": []byte("t0ken")}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	out, errOut, code := w.run(t, `apiVersion: servicecatalog.k8s.io/v1beta1
kind: ClusterServiceBroker
metadata:
  name: old
spec:
  url: `+w.url+`
  relistBehavior: Duration
  relistDuration: 30m
  relistRequests: 3
  authInfo:
    bearer:
      secretRef:
        name: tok
        namespace: catalog-system
  catalogRestrictions:
    servicePlan: ["free==true"]
`, "apply", "-f", "-")
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "broker.catalog.kubectl-catalog.io/old created\n")
	assert.Assert(t, is.Contains(errOut, "spec.relistRequests ignored"), errOut)
	b, err := w.c.Store().Brokers().Get(ctx, storetest.CatalogNamespace, "old")
	assert.NilError(t, err)
	assert.Equal(t, b.Spec.Auth.Type, v1alpha1.AuthBearer)
	assert.Equal(t, b.Spec.Auth.SecretRef.Name, "tok")
	assert.Equal(t, b.Spec.RelistInterval.Duration, 30*time.Minute)
	assert.DeepEqual(t, b.Spec.CatalogRestrictions.ServicePlan, []string{"free==true"})
}

func TestDelete_Broker_DeregistersOnlyWithoutInstances(t *testing.T) {
	w := newWorld(t)
	w.file(t, "broker.yaml", strings.Replace(otherBroker, "URL", w.url, 1))
	w.file(t, "my.yaml", mysqlInstance)
	_, errOut, code := w.run(t, "", "apply", "-f", w.dir)
	assert.Equal(t, code, 0, errOut)

	// The broker alone: refused while its instance exists.
	_, errOut, code = w.run(t, "", "delete", "-f", filepath.Join(w.dir, "broker.yaml"), "--yes")
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(errOut, `instance`), errOut)
	ctx := context.Background()
	_, err := w.c.Store().Brokers().Get(ctx, storetest.CatalogNamespace, "other")
	assert.NilError(t, err)

	// Both: the instance is deprovisioned (synchronously), then the broker deregistered.
	_, errOut, code = w.run(t, "", "delete", "-f", w.dir, "--yes")
	assert.Equal(t, code, 0, errOut)
	_, err = w.c.Store().Brokers().Get(ctx, storetest.CatalogNamespace, "other")
	assert.Assert(t, err != nil, "the broker is still registered")
}

func TestApply_LabelChange_OneWriteNoBrokerCall(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	p := w.file(t, "db.yaml", instance("5"))
	_, errOut, code := w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	before, err := w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
	assert.NilError(t, err)

	// Another label value, an annotation, and catalog keys that must not be forged.
	w.file(t, "db.yaml", strings.Replace(instance("5"), "    team: payments\n",
		"    team: billing\n    catalog.kubectl-catalog.io/kind: ServiceBinding\n  annotations:\n    owner: ops\n    catalog.kubectl-catalog.io/author: mallory\n", 1))
	out, errOut, code := w.run(t, "", "diff", "-f", p)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(out, "-    team: payments\n+    team: billing\n"), out)
	assert.Assert(t, is.Contains(out, "+    owner: ops\n"), out)
	assert.Assert(t, !strings.Contains(out, "mallory"), out)

	calls := w.calls.Load()
	w.c.Core.ClearActions()
	out, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/db configured\n")
	assert.Equal(t, w.calls.Load(), calls, "a broker was called")
	assert.Equal(t, w.recordWrites(), 1)
	after, err := w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
	assert.NilError(t, err)
	assert.Equal(t, after.Labels["team"], "billing")
	assert.Equal(t, after.Annotations["owner"], "ops")
	for k, v := range before.Labels {
		if strings.HasPrefix(k, "catalog.kubectl-catalog.io/") || k == "app.kubernetes.io/managed-by" {
			assert.Equal(t, after.Labels[k], v, "label %s", k)
		}
	}
	for k, v := range before.Annotations {
		if strings.HasPrefix(k, "catalog.kubectl-catalog.io/") {
			assert.Equal(t, after.Annotations[k], v, "annotation %s", k)
		}
	}
	assert.DeepEqual(t, after.Spec, before.Spec)

	// Again: a no-op.
	w.c.Core.ClearActions()
	out, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/db unchanged\n")
	assert.Equal(t, w.recordWrites(), 0)
}
