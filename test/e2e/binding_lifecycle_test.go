package e2e

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// Plan ids of the demo catalog (test/broker/catalog.yaml).
const (
	bndPlanHA      = "4aee5e8e-5c38-4b9a-8d7e-13b3d54e907a" // postgresql/ha: async bind, binding_rotatable
	bndPlanArchive = "aa09088d-9915-4d22-9f11-bffb5c0add9e" // object-storage/archive: not bindable
)

// bndSnapshot is what users and kubectl-catalog write in the namespace: every ConfigMap
// and Secret by name, with its resourceVersion and deletion state (any write changes it),
// and every Deployment with its generation and annotations. What kube-controller-manager
// writes at its own pace is left out, so two snapshots differ only by what a command did:
// the kube-root-ca.crt ConfigMap, service account token Secrets, a Deployment's status
// and its deployment.kubernetes.io/ annotations (the revision).
func bndSnapshot(t *testing.T, e *bndEnv) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	cms, err := e.admin.CoreV1().ConfigMaps(e.ns).List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	for _, c := range cms.Items {
		if c.Name == "kube-root-ca.crt" {
			continue
		}
		out["configmap/"+c.Name] = fmt.Sprintf("%s deleting=%v", c.ResourceVersion, c.DeletionTimestamp != nil)
	}
	secrets, err := e.admin.CoreV1().Secrets(e.ns).List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	for _, s := range secrets.Items {
		if s.Type == corev1.SecretTypeServiceAccountToken {
			continue
		}
		out["secret/"+s.Name] = s.ResourceVersion
	}
	deps, err := e.admin.AppsV1().Deployments(e.ns).List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	for _, d := range deps.Items {
		annotations := maps.Clone(d.Annotations)
		maps.DeleteFunc(annotations, func(k, _ string) bool { return strings.HasPrefix(k, "deployment.kubernetes.io/") })
		out["deployment/"+d.Name] = fmt.Sprintf("generation=%d annotations=%v", d.Generation, annotations)
	}
	return out
}

// bndDeployment creates deployment name with two containers (one setting
// SERVICE_BINDING_ROOT of its own) as the admin.
func bndDeployment(t *testing.T, e *bndEnv, name string) *appsv1.Deployment {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "app", Image: "registry.example/app:1", Env: []corev1.EnvVar{{Name: "MODE", Value: "prod"}}},
					{Name: "sidecar", Image: "registry.example/sidecar:1", Env: []corev1.EnvVar{{Name: "SERVICE_BINDING_ROOT", Value: "/etc/bindings"}}},
				}},
			},
		},
	}
	created, err := e.admin.AppsV1().Deployments(e.ns).Create(context.Background(), d, metav1.CreateOptions{})
	assert.NilError(t, err)
	return created
}

func TestBinding_SyncBindDescribeUnbind(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "hobby", nil)

	r := e.run(t, "bind", "db", "-p", "role=readonly")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, `binding "db" created; credentials in Secret "db" (keys: `))
	b := e.binding(t, "db")
	assert.Equal(t, b.Status.Phase, v1alpha1.PhaseReady)
	assert.Assert(t, is.Contains(b.Finalizers, store.Finalizer))
	held, ok := e.b.Binding(b.Spec.ExternalID)
	assert.Assert(t, ok, "the broker holds the binding")
	assert.Equal(t, held.Parameters["role"], "readonly")
	s, ok := e.secret(t, "db")
	assert.Assert(t, ok)
	for _, k := range []string{"host", "port", "username", "password", "database", "uri"} {
		assert.Assert(t, len(s.Data[k]) > 0, "key %s: %v", k, slices.Sorted(maps.Keys(s.Data)))
	}
	assert.Equal(t, string(s.Data["port"]), "5432")

	r = e.run(t, "get", "bindings")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "INSTANCE"))
	assert.Assert(t, is.Contains(r.Stdout, "Ready"))
	r = e.run(t, "get", "bnd", "-o", "wide", "--instance", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, b.Spec.ExternalID))

	r = e.run(t, "describe", "binding", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, fmt.Sprintf("password   %d bytes", len(s.Data["password"]))))
	assert.Assert(t, is.Contains(r.Stdout, "endpoint: "))
	r = e.run(t, "describe", "instance", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "Bindings:         db"))

	// A server-side dry run goes through the API server's checks and changes nothing.
	unbinds := len(e.b.RequestsFor(broker.OpUnbind))
	r = e.run(t, "unbind", "db", "--dry-run=server")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "db deleted (server dry run)"))
	assert.Assert(t, is.Contains(r.Stderr, `binding "db" in namespace`))
	kept, err := e.st.Bindings().Get(context.Background(), e.ns, "db")
	assert.NilError(t, err, "a server dry run removed the binding")
	assert.Assert(t, kept.DeletionTimestamp == nil, "a server dry run marked the binding for deletion")
	_, ok = e.secret(t, "db")
	assert.Assert(t, ok, "a server dry run removed the Secret")
	assert.Equal(t, len(e.b.RequestsFor(broker.OpUnbind)), unbinds, "a server dry run called the broker")

	r = e.run(t, "unbind", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, `Secret "db" deleted`))
	e.bndGone(t, "db", "db")
	assert.DeepEqual(t, bndBrokerBindings(e.b), []string{})
	assert.Assert(t, is.Len(e.b.Violations(), 0))
}

func TestBinding_AsyncBind_WithAndWithoutWait(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "ha", nil)

	r := e.run(t, "bind", "db", "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, `binding "db" created`))
	assert.Assert(t, len(e.b.RequestsFor(broker.OpBindingLastOperation)) > 0)
	assert.Assert(t, len(e.b.RequestsFor(broker.OpGetBinding)) > 0, "the credentials come from GET binding")
	_, ok := e.secret(t, "db")
	assert.Assert(t, ok)

	// Without --wait the command returns once the broker accepted; the record says so.
	r = e.run(t, "bind", "db", "--name", "later")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "The broker is working on binding \"later\""))
	later := e.binding(t, "later")
	assert.Assert(t, later.Status.InFlight != nil && later.Status.InFlight.Async, "%+v", later.Status)
	_, ok = e.secret(t, "later")
	assert.Assert(t, !ok, "no Secret before the bind finished")

	// Unbinding a binding still being bound finishes the bind first, then unbinds it.
	r = e.run(t, "unbind", "later", "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	e.bndGone(t, "later", "later")
	r = e.run(t, "unbind", "db", "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	e.bndGone(t, "db", "db")
	assert.DeepEqual(t, bndBrokerBindings(e.b), []string{})
	assert.Assert(t, is.Len(e.b.Violations(), 0))
}

func TestBinding_UnbindByInstance_NameListAndAll(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "hobby", nil)
	for _, n := range []string{"a", "b", "c"} {
		r := e.run(t, "bind", "db", "--name", n)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	before := bndSnapshot(t, e)
	r := e.run(t, "unbind", "db", "--all")
	assert.Equal(t, r.ExitCode, 2, "several bindings need --yes outside a terminal: %s", r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "--yes"))
	assert.DeepEqual(t, bndSnapshot(t, e), before)

	r = e.run(t, "unbind", "db", "--name", "a,b", "--yes")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	e.bndGone(t, "a", "a")
	e.bndGone(t, "b", "b")
	c := e.binding(t, "c")
	assert.DeepEqual(t, bndBrokerBindings(e.b), []string{c.Spec.ExternalID})

	r = e.run(t, "unbind", "--instance", "db", "--all", "--yes")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	e.bndGone(t, "c", "c")
	assert.DeepEqual(t, bndBrokerBindings(e.b), []string{})

	r = e.run(t, "unbind", "db", "--all", "--yes")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "nothing to unbind"))
}

func TestBinding_Transforms_ShapeTheSecret(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "hobby", nil)
	_, err := e.admin.CoreV1().Secrets(e.ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "extra"}, StringData: map[string]string{"sslmode": "verify-full"},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)

	r := e.run(t, "bind", "db", "--rename-key", "uri=DATABASE_URL", "--add-key", "driver=postgres",
		"--add-keys-from-secret", "extra", "--remove-key", "tls", "--remove-key", "database")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	s, ok := e.secret(t, "db")
	assert.Assert(t, ok)
	keys := slices.Sorted(maps.Keys(s.Data))
	for _, k := range []string{"DATABASE_URL", "driver", "sslmode", "host", "password"} {
		assert.Assert(t, slices.Contains(keys, k), "key %s missing: %v", k, keys)
	}
	for _, k := range []string{"uri", "tls", "database"} {
		assert.Assert(t, !slices.Contains(keys, k), "key %s left: %v", k, keys)
	}
	assert.Equal(t, string(s.Data["driver"]), "postgres")
	assert.Equal(t, string(s.Data["sslmode"]), "verify-full")
	assert.Assert(t, strings.HasPrefix(string(s.Data["DATABASE_URL"]), "postgresql://"))
	assert.DeepEqual(t, e.binding(t, "db").Status.Secret.Keys, keys)
	assert.Assert(t, is.Contains(r.Stderr, "DATABASE_URL"))
}

func TestBinding_ProjectionIntoDeployment_AndExactRemoval(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "hobby", nil)
	orig := bndDeployment(t, e, "web")

	// A client dry run writes nothing and shows the change.
	before := bndSnapshot(t, e)
	r := e.run(t, "bind", "db", "--to", "deployment/web", "--dry-run=client")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "kind: ServiceBinding"))
	assert.Assert(t, is.Contains(r.Stdout, "kind: Deployment"))
	assert.Assert(t, is.Contains(r.Stdout, "SERVICE_BINDING_ROOT"))
	r = e.run(t, "bind", "db", "--to", "deployment/web", "--dry-run=server")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "accepted by the API server"))
	assert.DeepEqual(t, bndSnapshot(t, e), before)
	assert.Assert(t, is.Len(e.b.RequestsFor(broker.OpBind), 0))

	r = e.run(t, "bind", "db", "--to", "deployment/web")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "projected into deployment/web (files under $SERVICE_BINDING_ROOT/db)"))
	b := e.binding(t, "db")
	assert.DeepEqual(t, b.Status.Projected, []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "web"}})

	d := e.deployment(t, "web")
	spec := d.Spec.Template.Spec
	var vol *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].Secret != nil && spec.Volumes[i].Secret.SecretName == "db" {
			vol = &spec.Volumes[i]
		}
	}
	assert.Assert(t, vol != nil, "no Secret volume: %+v", spec.Volumes)
	mountOf := func(c corev1.Container) string {
		for _, m := range c.VolumeMounts {
			if m.Name == vol.Name {
				assert.Assert(t, m.ReadOnly)
				return m.MountPath
			}
		}
		return ""
	}
	envOf := func(c corev1.Container, name string) string {
		for _, v := range c.Env {
			if v.Name == name {
				return v.Value
			}
		}
		return ""
	}
	assert.Equal(t, mountOf(spec.Containers[0]), "/bindings/db")
	assert.Equal(t, envOf(spec.Containers[0], "SERVICE_BINDING_ROOT"), "/bindings")
	assert.Equal(t, mountOf(spec.Containers[1]), "/etc/bindings/db", "a container's own SERVICE_BINDING_ROOT is honoured")
	assert.Equal(t, envOf(spec.Containers[1], "SERVICE_BINDING_ROOT"), "/etc/bindings")

	r = e.run(t, "describe", "binding", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "deployment/web"))

	r = e.run(t, "unbind", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "projection removed from deployment/web"))
	e.bndGone(t, "db", "db")
	after := e.deployment(t, "web")
	assert.DeepEqual(t, after.Spec.Template, orig.Spec.Template)
	for k := range after.Annotations {
		assert.Assert(t, !strings.HasPrefix(k, store.Prefix), "annotation %s is left on the deployment", k)
	}
}

// bndFreezeTemplate makes the API server refuse any change to the pod template of
// deployment name in the test's namespace (a ValidatingAdmissionPolicy), and waits until
// it does.
func bndFreezeTemplate(t *testing.T, e *bndEnv, name string) {
	t.Helper()
	ctx := context.Background()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-" + e.ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("object.metadata.name != %q || object.spec.template == oldObject.spec.template", name),
				Message:    "the pod template of deployment " + name + " is frozen",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: e.ns},
			}},
		},
	}
	api := e.admin.AdmissionregistrationV1()
	_, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
	assert.NilError(t, err)
	t.Cleanup(func() {
		_ = api.ValidatingAdmissionPolicies().Delete(context.Background(), policy.Name, metav1.DeleteOptions{})
	})
	_, err = api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{})
	assert.NilError(t, err)
	t.Cleanup(func() {
		_ = api.ValidatingAdmissionPolicyBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	deadline := time.Now().Add(slow(30 * time.Second))
	for {
		d := e.deployment(t, name)
		d.Spec.Template.Annotations = map[string]string{"probe": "x"}
		_, err := e.admin.AppsV1().Deployments(e.ns).Update(ctx, d, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), "frozen") {
			return
		}
		assert.Assert(t, time.Now().Before(deadline), "the admission policy is not in force: %v", err)
		time.Sleep(200 * time.Millisecond)
	}
}

func TestBinding_ProjectionFailedAtTheSecondWorkload_UnbindTakesItBackFromTheFirst(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "hobby", nil)
	origA := bndDeployment(t, e, "a")
	origB := bndDeployment(t, e, "b")
	bndFreezeTemplate(t, e, "b")

	r := e.run(t, "bind", "db", "--to", "deployment/a", "--to", "deployment/b")
	t.Logf("bind: exit %d: %s", r.ExitCode, r.Stderr)
	b := e.binding(t, "db")
	assert.Assert(t, b.Status.Retry != nil && b.Status.Retry.Reason == "BindProjectionFailed", "%+v", b.Status)
	assert.Assert(t, !reflect.DeepEqual(e.deployment(t, "a").Spec.Template, origA.Spec.Template), "deployment a was changed")

	r = e.run(t, "unbind", "db", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	e.bndGone(t, "db", "db")
	assert.DeepEqual(t, e.deployment(t, "a").Spec.Template, origA.Spec.Template)
	assert.DeepEqual(t, e.deployment(t, "b").Spec.Template, origB.Spec.Template)
}

func TestBinding_EnvPrefixProjection(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "hobby", nil)
	orig := bndDeployment(t, e, "api")

	r := e.run(t, "bind", "db", "--to", "deploy/api", "--env-prefix", "DB_")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "environment variables prefixed DB_"))
	for _, c := range e.deployment(t, "api").Spec.Template.Spec.Containers {
		assert.DeepEqual(t, c.EnvFrom, []corev1.EnvFromSource{{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}})
	}
	r = e.run(t, "unbind", "db", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.DeepEqual(t, e.deployment(t, "api").Spec.Template, orig.Spec.Template)
}

// bndDueSoon makes bindings of the ha plan expire in an hour, with renew_before at once.
func bndDueSoon(c *broker.Catalog) {
	pb := c.Behaviours[bndPlanHA]
	pb.BindingTTL, pb.RenewBefore = broker.Duration(time.Hour), broker.Duration(time.Hour)
	c.Behaviours[bndPlanHA] = pb
}

func TestBinding_RotationDueShownThenRotate(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "ha", bndDueSoon)
	r := e.run(t, "bind", "db", "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	old := e.binding(t, "db")
	oldSecret, ok := e.secret(t, "db")
	assert.Assert(t, ok)

	r = e.run(t, "get", "bindings")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "rotation due"))
	r = e.run(t, "describe", "binding", "db")
	assert.Assert(t, is.Contains(r.Stdout, "rotation due"))

	r = e.run(t, "bind", "--rotate", "db", "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	cur := e.binding(t, "db")
	assert.Assert(t, cur.CurrentExternalID() != old.CurrentExternalID())
	assert.Equal(t, cur.Spec.ExternalID, old.Spec.ExternalID, "a rotation changes the status only")
	assert.Assert(t, is.Contains(r.Stderr, "new binding id "+cur.CurrentExternalID()))
	assert.Assert(t, is.Contains(r.Stderr, "old binding id "+old.CurrentExternalID()+" was unbound"))
	assert.Equal(t, cur.UID, old.UID, "the record is kept")
	assert.Equal(t, cur.Status.Bound.BindingID, cur.CurrentExternalID())
	assert.Assert(t, is.Len(cur.Status.Retired, 0))

	assert.DeepEqual(t, bndBrokerBindings(e.b), []string{cur.CurrentExternalID()})
	held, _ := e.b.Binding(cur.CurrentExternalID())
	assert.Equal(t, held.PredecessorBindingID, old.CurrentExternalID())
	newSecret, ok := e.secret(t, "db")
	assert.Assert(t, ok, "same Secret name")
	assert.Equal(t, newSecret.UID, oldSecret.UID, "the Secret is updated in place")
	assert.Assert(t, string(newSecret.Data["password"]) != string(oldSecret.Data["password"]), "new credentials")
	assert.Assert(t, is.Len(e.b.Violations(), 0))
}

func TestBinding_DeprovisionWithBindings_UnbindsFirst(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "hobby", nil)
	for _, n := range []string{"one", "two"} {
		r := e.run(t, "bind", "db", "--name", n)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	assert.Equal(t, len(e.b.Bindings()), 2)
	r := e.run(t, "deprovision", "db", "--yes", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "its bindings one, two"))
	e.bndGone(t, "one", "one")
	e.bndGone(t, "two", "two")
	_, err := e.st.Instances().Get(context.Background(), e.ns, "db")
	assert.Assert(t, store.IsNotFound(err))
	assert.DeepEqual(t, bndBrokerBindings(e.b), []string{})
	assert.Assert(t, is.Len(e.b.Instances(), 0))
	assert.Assert(t, is.Len(e.b.Violations(), 0))
}

func TestBinding_BrokerDownOnUnbind_LeavesItPendingWithTheReason(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "hobby", nil)
	r := e.run(t, "bind", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	_, err := e.b.InjectFault(broker.Fault{Op: broker.OpUnbind, Action: broker.ActionRespond, Status: 503, Description: "maintenance window"})
	assert.NilError(t, err)

	r = e.run(t, "unbind", "db")
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "not unbound yet"))
	assert.Assert(t, is.Contains(r.Stderr, "503"))
	assert.Assert(t, is.Contains(r.Stderr, "reconcile"))
	b := e.binding(t, "db")
	assert.Assert(t, b.DeletionTimestamp != nil && b.Status.Retry != nil)
	_, ok := e.secret(t, "db")
	assert.Assert(t, !ok, "the credentials are gone from the cluster at once")
	assert.Equal(t, len(e.b.Bindings()), 1)

	r = e.run(t, "unbind", "db", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	e.bndGone(t, "db", "db")
	assert.DeepEqual(t, bndBrokerBindings(e.b), []string{})
}

func TestBinding_BadInput_FailsClearlyAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "hobby", nil)
	ctx := context.Background()
	r := e.run(t, "provision", "cold", "--class", "object-storage", "--plan", "archive")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	// An async provision without --wait leaves the instance provisioning.
	r = e.run(t, "provision", "slow", "--class", "postgresql", "--plan", "standard")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = e.run(t, "bind", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	_, err := e.admin.CoreV1().Secrets(e.ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "taken"}, StringData: map[string]string{"mine": "yes"},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	bndDeployment(t, e, "web")
	binds := len(e.b.RequestsFor(broker.OpBind))
	before := bndSnapshot(t, e)

	for _, tc := range []struct {
		name string
		args []string
		exit int
		want []string
	}{
		{name: "missing instance", args: []string{"bind", "nosuch"}, exit: 1, want: []string{`instance "nosuch" not found`, "kubectl catalog get instances"}},
		{name: "unready instance", args: []string{"bind", "slow"}, exit: 1, want: []string{`instance "slow" is not ready`}},
		{name: "plan not bindable", args: []string{"bind", "cold"}, exit: 1, want: []string{`plan "archive" of class "object-storage" is not bindable`}},
		{name: "foreign Secret", args: []string{"bind", "db", "--name", "x", "--secret-name", "taken"}, exit: 1,
			want: []string{`Secret "taken" already exists and is not managed by this binding: choose another with --secret-name`}},
		{name: "invalid transform", args: []string{"bind", "db", "--name", "x", "--rename-key", "uri"}, exit: 2, want: []string{`--rename-key "uri": expected FROM=TO`}},
		{name: "missing workload", args: []string{"bind", "db", "--name", "x", "--to", "deployment/nosuch"}, exit: 1, want: []string{`deployment "nosuch" not found`}},
		{name: "job workload", args: []string{"bind", "db", "--name", "x", "--to", "job/migrate"}, exit: 2, want: []string{"Job's pod template cannot be changed"}},
		{name: "binding name taken", args: []string{"bind", "db"}, exit: 1, want: []string{`binding "db" already exists`, "kubectl catalog describe binding db"}},
		{name: "schema violation", args: []string{"bind", "db", "--name", "x", "-p", "role=admin"}, exit: 1, want: []string{"role"}},
		{name: "missing keys Secret", args: []string{"bind", "db", "--name", "x", "--add-keys-from-secret", "nosuch"}, exit: 1, want: []string{`Secret "nosuch" not found`}},
		{name: "unbind unknown", args: []string{"unbind", "nosuch"}, exit: 1, want: []string{`binding "nosuch" not found`}},
		{name: "unbind instance name", args: []string{"unbind", "slow"}, exit: 1, want: []string{"unbind slow --all"}},
		{name: "rotate unknown", args: []string{"bind", "--rotate", "nosuch"}, exit: 1, want: []string{`binding "nosuch" not found`}},
		{name: "rotate with flags", args: []string{"bind", "--rotate", "db", "--to", "deployment/web"}, exit: 2, want: []string{"--rotate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.run(t, tc.args...)
			assert.Equal(t, r.ExitCode, tc.exit, r.Stderr)
			for _, w := range tc.want {
				assert.Assert(t, is.Contains(r.Stderr, w))
			}
			assert.Assert(t, !strings.Contains(r.Stderr, "invalid argument"), "pflag's wrapping is not shown: %s", r.Stderr)
		})
	}
	assert.DeepEqual(t, bndSnapshot(t, e), before)
	assert.Equal(t, len(e.b.RequestsFor(broker.OpBind)), binds)
}

func TestBinding_CredentialsNeverLeak(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "hobby", nil)
	ctx := context.Background()
	bindRun := e.run(t, "bind", "db")
	assert.Equal(t, bindRun.ExitCode, 0, bindRun.Stderr)
	verbose := e.run(t, "bind", "db", "--name", "db2", "-v=9")
	assert.Equal(t, verbose.ExitCode, 0, verbose.Stderr)
	assert.Assert(t, is.Contains(verbose.Stderr, "curl"), "-v=9 logs the requests")

	var secrets []string
	for _, name := range []string{"db", "db2"} {
		s, ok := e.secret(t, name)
		assert.Assert(t, ok)
		for _, k := range []string{"password", "uri"} {
			assert.Assert(t, len(s.Data[k]) > 8)
			secrets = append(secrets, string(s.Data[k]))
		}
	}
	outputs := map[string]string{
		"bind":      bindRun.Stdout + bindRun.Stderr,
		"bind -v=9": verbose.Stdout + verbose.Stderr,
		"get -o yaml": func() string {
			r := e.run(t, "get", "bindings", "-o", "yaml")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			return r.Stdout + r.Stderr
		}(),
		"get -o json wide": func() string { r := e.run(t, "get", "bindings", "-o", "wide"); return r.Stdout + r.Stderr }(),
		"describe":         func() string { r := e.run(t, "describe", "binding", "db"); return r.Stdout + r.Stderr }(),
		"describe instance": func() string {
			r := e.run(t, "describe", "instance", "db")
			return r.Stdout + r.Stderr
		}(),
	}
	cms, err := e.admin.CoreV1().ConfigMaps(e.ns).List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	for _, c := range cms.Items {
		outputs["configmap "+c.Name] = fmt.Sprint(c.Data, c.Annotations, c.Labels)
	}
	for what, text := range outputs {
		for _, v := range secrets {
			assert.Assert(t, !strings.Contains(text, v), "a credential value appears in %s", what)
		}
	}

	shown := e.run(t, "describe", "binding", "db", "--show-secrets")
	assert.Equal(t, shown.ExitCode, 0, shown.Stderr)
	assert.Assert(t, is.Contains(shown.Stdout, secrets[0]))
	assert.Assert(t, is.Contains(shown.Stdout, secrets[1]))
}
