package install

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

func TestRules_HaveNoWildcardAndCoverWhatReconcileDoes(t *testing.T) {
	rules := Rules()
	assert.Equal(t, len(rules), len(Permissions))
	for _, r := range rules {
		for _, list := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.ResourceNames, r.NonResourceURLs} {
			for _, v := range list {
				assert.Assert(t, !strings.Contains(v, "*"), "wildcard in %+v", r)
			}
		}
		assert.Assert(t, len(r.Verbs) > 0 && len(r.Resources) > 0, "%+v", r)
	}
	for _, p := range Permissions {
		assert.Assert(t, p.Why != "", "%+v has no reason", p.PolicyRule)
	}
	allows := func(group, resource, verb string) bool {
		for _, r := range rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		group, resource, verb string
		want                  bool
	}{
		{"", "configmaps", "list", true},
		{"", "configmaps", "watch", true},
		{"", "configmaps", "patch", true},
		{"", "configmaps", "delete", true},
		{"", "secrets", "get", true},
		{"", "secrets", "create", true},
		{"", "secrets", "delete", true},
		{"", "namespaces", "get", true},
		{"", "namespaces", "list", true},
		{"authentication.k8s.io", "selfsubjectreviews", "create", true},
		{"apps", "deployments", "update", true},
		{"apps", "daemonsets", "get", true},
		{"batch", "cronjobs", "update", true},
		{"batch", "jobs", "get", true},
		{"authorization.k8s.io", "subjectaccessreviews", "create", true},
		{"admissionregistration.k8s.io", "validatingadmissionpolicies", "get", true},
		{"admissionregistration.k8s.io", "validatingadmissionpolicybindings", "get", true},
		{"networking.k8s.io", "servicecidrs", "list", true},
		{"", "nodes", "list", true},
		{"discovery.k8s.io", "endpointslices", "get", true},
		// Not needed, so not granted.
		{"", "nodes", "update", false},
		{"discovery.k8s.io", "endpointslices", "list", false},
		{"", "secrets", "list", false},
		{"", "secrets", "watch", false},
		{"", "namespaces", "delete", false},
		{"", "pods", "list", false},
		{"apps", "deployments", "delete", false},
		{"apps", "deployments", "create", false},
		{"rbac.authorization.k8s.io", "clusterroles", "create", false},
		{"", "users", "impersonate", false},
		{"admissionregistration.k8s.io", "validatingadmissionpolicies", "list", false},
		{"admissionregistration.k8s.io", "validatingadmissionpolicies", "update", false},
	} {
		assert.Equal(t, allows(tc.group, tc.resource, tc.verb), tc.want, "%s %s.%s", tc.verb, tc.resource, tc.group)
	}
	// The trust policy's objects, and the API server's EndpointSlice, are readable by
	// name only.
	for _, r := range rules {
		if slices.Contains(r.APIGroups, "discovery.k8s.io") {
			assert.DeepEqual(t, r.ResourceNames, []string{"kubernetes"})
		}
		if slices.Contains(r.APIGroups, "admissionregistration.k8s.io") {
			assert.DeepEqual(t, r.ResourceNames, []string{store.TrustPolicyName})
		}
	}
}

func TestBuild_CronJobRunsReconcileBoundedAndLocked(t *testing.T) {
	o := Defaults()
	o.Image = "registry.example/kubectl-catalog:v1"
	o.Workers = 16
	objs := Build(o)
	assert.Equal(t, len(objs.CronJobs), 1)
	assert.Equal(t, len(objs.Deployments), 0)
	cj := objs.CronJobs[0]
	assert.Equal(t, cj.Spec.ConcurrencyPolicy, batchv1.ForbidConcurrent)
	assert.Equal(t, *cj.Spec.JobTemplate.Spec.BackoffLimit, int32(0))
	assert.Equal(t, *cj.Spec.JobTemplate.Spec.ActiveDeadlineSeconds, int64(270))
	c := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	assert.DeepEqual(t, c.Command, []string{"kubectl-catalog", "reconcile", "-A", "--max-duration", "4m", "--retry-horizon", "0", "--workers", "16", "-o", "json"})
	assert.Equal(t, cj.Spec.JobTemplate.Spec.Template.Spec.ServiceAccountName, o.Name)
	assert.Equal(t, objs.ClusterRoleBinding.RoleRef.Name, objs.ClusterRole.Name)
	assert.Equal(t, objs.ClusterRoleBinding.Subjects[0].Namespace, o.Namespace)

	o.CatalogNamespace = "brokers"
	assert.Assert(t, is.Contains(strings.Join(o.Command(0), " "), "--catalog-namespace brokers"))
	o.MaxDuration = 90 * time.Second
	assert.Equal(t, o.ActiveDeadline(), 2*time.Minute)
	for d, want := range map[time.Duration]string{4 * time.Minute: "4m", 90 * time.Second: "1m30s", time.Hour: "1h", 50 * time.Second: "50s", 61 * time.Minute: "1h1m"} {
		assert.Equal(t, shortDuration(d), want)
	}
}

func TestBuild_NetworkPolicyKeepsReconcileFromTheMetadataService_EgressFlagsGoToReconcile(t *testing.T) {
	o := Defaults()
	o.Image = "registry.example/kubectl-catalog:v1"
	o.NamespaceBrokerAllowCIDRs = []string{"10.0.0.5"}
	o.NamespaceBrokerDenyCIDRs = []string{"10.96.0.0/12", "10.244.0.0/16"}
	objs := Build(o)
	np := objs.NetworkPolicy
	assert.Equal(t, np.Namespace, o.Namespace)
	assert.DeepEqual(t, np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress})
	pod := objs.CronJobs[0].Spec.JobTemplate.Spec.Template.Labels
	for k, v := range np.Spec.PodSelector.MatchLabels {
		assert.Equal(t, pod[k], v, "the policy selects the pods of reconcile")
	}
	var excepted []string
	for _, r := range np.Spec.Egress {
		for _, to := range r.To {
			if to.IPBlock != nil {
				excepted = append(excepted, to.IPBlock.Except...)
			}
		}
	}
	for _, cidr := range []string{"169.254.169.254/32", "100.100.100.200/32", "fd00:ec2::254/128", "64:ff9b::/96"} {
		assert.Check(t, is.Contains(excepted, cidr))
	}
	for _, r := range np.Spec.Egress {
		for _, to := range r.To {
			if b := to.IPBlock; b != nil {
				for _, e := range b.Except {
					assert.Check(t, strings.Contains(e, ":") == strings.Contains(b.CIDR, ":"), "%s excepted from %s", e, b.CIDR)
				}
			}
		}
	}
	assert.Assert(t, slices.Contains(objs.List(), runtime.Object(np)), "applied")
	assert.Assert(t, is.Contains(strings.Join(o.Command(0), " "), "--namespace-broker-allow-cidr 10.0.0.5 --namespace-broker-deny-cidr 10.96.0.0/12,10.244.0.0/16"))
	o.Serve = true
	assert.Assert(t, is.Contains(strings.Join(o.ServeCommand(0), " "), "--namespace-broker-deny-cidr 10.96.0.0/12,10.244.0.0/16"))
}

func TestValidate_NamesTheFlag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{name: "valid", mutate: func(*Options) {}},
		{name: "no image", mutate: func(o *Options) { o.Image = "" }, wantErr: "--image is required"},
		{name: "spaced image", mutate: func(o *Options) { o.Image = "a b" }, wantErr: "--image"},
		{name: "bad namespace", mutate: func(o *Options) { o.Namespace = "Catalog" }, wantErr: "--namespace"},
		{name: "long name", mutate: func(o *Options) { o.Name = strings.Repeat("a", 53) }, wantErr: "--name"},
		{name: "bad schedule", mutate: func(o *Options) { o.Schedule = "* * *" }, wantErr: "--schedule"},
		{name: "zero duration", mutate: func(o *Options) { o.MaxDuration = 0 }, wantErr: "--max-duration"},
		{name: "no workers", mutate: func(o *Options) { o.Workers = 0 }, wantErr: "--workers"},
		{name: "no shards", mutate: func(o *Options) { o.Shards = 0 }, wantErr: "--shards must be between 1 and 64"},
		{name: "too many shards", mutate: func(o *Options) { o.Shards = 65 }, wantErr: "--shards"},
		{name: "name too long for its shards", mutate: func(o *Options) { o.Name, o.Shards = strings.Repeat("a", 51), 10 }, wantErr: "too long for 10 shards"},
		{name: "replicas without serve", mutate: func(o *Options) { o.Replicas = 2 }, wantErr: "--replicas 2 needs --serve"},
		{name: "serve without replicas", mutate: func(o *Options) { o.Serve, o.Replicas = true, 0 }, wantErr: "--replicas must be at least 1"},
		{name: "serve with its own bound", mutate: func(o *Options) { o.Serve, o.MaxDuration = true, 0 }},
		{name: "a shard group and shards", mutate: func(o *Options) { o.Serve, o.Replicas, o.Shards = true, 3, 2 }, wantErr: "--shards 2 and --replicas 3 cannot go together"},
		{name: "one replica per shard", mutate: func(o *Options) { o.Serve, o.Replicas, o.Shards = true, 1, 2 }},
		{name: "serve with a bad bound", mutate: func(o *Options) { o.Serve, o.MaxDuration = true, time.Millisecond }, wantErr: "--max-duration"},
		{name: "egress ranges", mutate: func(o *Options) {
			o.NamespaceBrokerAllowCIDRs, o.NamespaceBrokerDenyCIDRs = []string{"10.1.2.3"}, []string{"10.96.0.0/12", "fd00::/8"}
		}},
		{name: "a bad egress range", mutate: func(o *Options) { o.NamespaceBrokerDenyCIDRs = []string{"10.96.0.0/40"} }, wantErr: "--namespace-broker-deny-cidr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Defaults()
			o.Image = "example.invalid/kubectl-catalog:test"
			tc.mutate(&o)
			err := o.Validate()
			if tc.wantErr == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestValidateSchedule(t *testing.T) {
	for _, tc := range []struct {
		schedule string
		wantErr  string
	}{
		{schedule: "*/5 * * * *"},
		{schedule: "0 3 * * 1-5"},
		{schedule: "15,45 */2 1,15 JAN-jun sun"},
		{schedule: "0 0 ? * MON"},
		{schedule: "5/10 * * * 7"},
		{schedule: "@hourly"},
		{schedule: "  @daily "},
		{schedule: "", wantErr: "empty"},
		{schedule: "* * * *", wantErr: "want 5 fields"},
		{schedule: "* * * * * *", wantErr: "want 5 fields"},
		{schedule: "60 * * * *", wantErr: `minute field "60": 60 is out of range 0-59`},
		{schedule: "* 24 * * *", wantErr: "hour field"},
		{schedule: "* * 0 * *", wantErr: "day of month field"},
		{schedule: "* * * 13 *", wantErr: "month field"},
		{schedule: "* * * * 8", wantErr: "day of week field"},
		{schedule: "*/0 * * * *", wantErr: "must be a positive number"},
		{schedule: "5-1 * * * *", wantErr: "is after"},
		{schedule: "1,,2 * * * *", wantErr: "empty list item"},
		{schedule: "? * * * *", wantErr: `"?" is only allowed`},
		{schedule: "x * * * *", wantErr: "not a number"},
		{schedule: "@every 5m", wantErr: "unknown descriptor"},
		{schedule: "TZ=UTC * * * * *", wantErr: "time zone"},
	} {
		t.Run(tc.schedule, func(t *testing.T) {
			err := ValidateSchedule(tc.schedule)
			if tc.wantErr == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestApply_CreatesThenLeavesUnchangedThenUninstalls(t *testing.T) {
	ctx := context.Background()
	core := fake.NewClientset()
	o := Defaults()
	o.Image = "example.invalid/kubectl-catalog:test"
	lines := func(rs []Result) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.String())
		}
		return out
	}

	// (The fake clientset ignores DryRun: the e2e test covers --dry-run=server.)
	res, err := Apply(ctx, core, Build(o), ApplyOptions{SkipEnforcementCheck: true})
	assert.NilError(t, err)
	assert.DeepEqual(t, lines(res), []string{
		"namespace/catalog-system created",
		"serviceaccount/catalog-reconcile created",
		"clusterrole.rbac.authorization.k8s.io/kubectl-catalog:catalog-system:catalog-reconcile created",
		"clusterrolebinding.rbac.authorization.k8s.io/kubectl-catalog:catalog-system:catalog-reconcile created",
		"cronjob.batch/catalog-reconcile created",
		"validatingadmissionpolicy.admissionregistration.k8s.io/kubectl-catalog-record-author created",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/kubectl-catalog-record-author created",
		"configmap/catalog-trust created",
	})
	cj, err := core.BatchV1().CronJobs(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image, o.Image)

	o.Image = "example.invalid/kubectl-catalog:v2"
	res, err = Apply(ctx, core, Build(o), ApplyOptions{SkipEnforcementCheck: true})
	assert.NilError(t, err)
	assert.Equal(t, res[0].Action, Unchanged)
	assert.Equal(t, res[4].String(), "cronjob.batch/catalog-reconcile configured")

	assert.Equal(t, res[7].String(), "configmap/catalog-trust unchanged", "the token stays while the policy does")

	res, err = UninstallTrust(ctx, core, o.TrustNamespace())
	assert.NilError(t, err)
	assert.DeepEqual(t, lines(res), []string{
		"configmap/catalog-trust deleted",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/kubectl-catalog-record-author deleted",
		"validatingadmissionpolicy.admissionregistration.k8s.io/kubectl-catalog-record-author deleted",
	})

	res, err = Uninstall(ctx, core, o.Namespace, o.Name)
	assert.NilError(t, err)
	assert.DeepEqual(t, lines(res), []string{
		"cronjob.batch/catalog-reconcile deleted",
		"networkpolicy.networking.k8s.io/catalog-reconcile not found, skipped",
		"clusterrolebinding.rbac.authorization.k8s.io/kubectl-catalog:catalog-system:catalog-reconcile deleted",
		"clusterrole.rbac.authorization.k8s.io/kubectl-catalog:catalog-system:catalog-reconcile deleted",
		"serviceaccount/catalog-reconcile deleted",
	})
	_, err = core.CoreV1().Namespaces().Get(ctx, o.Namespace, metav1.GetOptions{})
	assert.NilError(t, err, "the namespace holds records: it stays")

	res, err = Uninstall(ctx, core, o.Namespace, o.Name)
	assert.NilError(t, err)
	for _, r := range res {
		assert.Equal(t, r.Action, NotFound, r.String())
	}
}

func TestClean_DropsServerFieldsAndEmptyStatus(t *testing.T) {
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "u", ResourceVersion: "1", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
	}
	m := Clean(sa)
	assert.DeepEqual(t, m, map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "a"}})
}

// A typed client returns objects without apiVersion and kind: Served puts them
// back, and leaves out what was deleted.
func TestServed_HasKindsAndLeavesOutDeletedObjects(t *testing.T) {
	served := Served([]Result{
		{Resource: "serviceaccount", Name: "a", Action: Unchanged, Object: &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}},
		{Resource: "cronjob.batch", Name: "b-1", Action: Pruned},
		{Resource: "cronjob.batch", Name: "b", Action: Created, Object: &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}}},
	})
	assert.Equal(t, len(served), 2)
	assert.DeepEqual(t, served[0], map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "a"}})
	assert.Equal(t, served[1]["apiVersion"], "batch/v1")
	assert.Equal(t, served[1]["kind"], "CronJob")
}

func TestApply_TrustTokenIsRenewedWhenThePolicyHadToBeCreatedOrIsNewer(t *testing.T) {
	ctx := context.Background()
	o := Defaults()
	o.Image = "example.invalid/kubectl-catalog:test"
	opts := ApplyOptions{SkipEnforcementCheck: true}
	token := func(core *fake.Clientset) string {
		cm, err := core.CoreV1().ConfigMaps(o.TrustNamespace()).Get(ctx, store.TrustConfigMap, metav1.GetOptions{})
		assert.NilError(t, err)
		assert.Equal(t, cm.Labels[store.LabelManagedBy], "", "the policy must not apply to its token")
		return cm.Data[store.TrustTokenKey]
	}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, core *fake.Clientset)
		want   string
	}{
		{name: "nothing changed", change: func(*testing.T, *fake.Clientset) {}, want: Unchanged},
		{name: "binding deleted", want: Renewed, change: func(t *testing.T, core *fake.Clientset) {
			assert.NilError(t, core.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, store.TrustPolicyName, metav1.DeleteOptions{}))
		}},
		{name: "policy weakened", want: Renewed, change: func(t *testing.T, core *fake.Clientset) {
			p, err := core.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, store.TrustPolicyName, metav1.GetOptions{})
			assert.NilError(t, err)
			p.Spec.Validations[0].Expression = "true"
			_, err = core.AdmissionregistrationV1().ValidatingAdmissionPolicies().Update(ctx, p, metav1.UpdateOptions{})
			assert.NilError(t, err)
		}},
		{name: "token emptied", want: Renewed, change: func(t *testing.T, core *fake.Clientset) {
			cm := trust.TokenConfigMap(o.TrustNamespace(), "")
			_, err := core.CoreV1().ConfigMaps(o.TrustNamespace()).Update(ctx, cm, metav1.UpdateOptions{})
			assert.NilError(t, err)
		}},
		// The API server writes the policy's status (its type checking) on its own,
		// a while after the policy is created: between the next apply's read and its
		// write it changes nothing that was applied, and the token stays.
		{name: "the policy's status written during the next apply", want: Unchanged, change: func(t *testing.T, core *fake.Clientset) {
			gvr := admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies")
			core.PrependReactor("patch", "validatingadmissionpolicies", func(clienttesting.Action) (bool, runtime.Object, error) {
				obj, err := core.Tracker().Get(gvr, "", store.TrustPolicyName)
				assert.NilError(t, err)
				p := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).DeepCopy()
				p.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{ObservedGeneration: p.Generation,
					TypeChecking: &admissionregistrationv1.TypeChecking{}}
				assert.NilError(t, core.Tracker().Update(gvr, p, ""))
				return false, nil, nil
			})
		}},
		{name: "token deleted", want: Created, change: func(t *testing.T, core *fake.Clientset) {
			assert.NilError(t, core.CoreV1().ConfigMaps(o.TrustNamespace()).Delete(ctx, store.TrustConfigMap, metav1.DeleteOptions{}))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core := fake.NewClientset()
			_, err := Apply(ctx, core, Build(o), opts)
			assert.NilError(t, err)
			before := token(core)
			tc.change(t, core)
			res, err := Apply(ctx, core, Build(o), opts)
			assert.NilError(t, err)
			last := res[len(res)-1]
			assert.Equal(t, last.String(), "configmap/catalog-trust "+tc.want)
			if tc.want == Unchanged {
				assert.Equal(t, token(core), before)
			} else {
				assert.Assert(t, token(core) != before && token(core) != "")
			}
		})
	}
}

func TestBuild_NoTrustPolicyLeavesItOut(t *testing.T) {
	o := Defaults()
	o.Image = "example.invalid/kubectl-catalog:test"
	o.CatalogNamespace = "brokers"
	objs := Build(o)
	assert.Equal(t, objs.TrustToken.Namespace, "brokers", "the token lives in the catalog namespace")
	assert.Equal(t, len(objs.List()), 9)
	o.NoTrustPolicy = true
	objs = Build(o)
	assert.Assert(t, objs.Policy == nil && objs.PolicyBinding == nil && objs.TrustToken == nil)
	assert.Equal(t, len(objs.List()), 6)
}

func TestBuild_ShardsMakeOneCronJobEach(t *testing.T) {
	o := Defaults()
	o.Image = "registry.example/kubectl-catalog:v1"
	o.Shards = 3
	objs := Build(o)
	assert.Equal(t, len(objs.CronJobs), 3)
	for i, cj := range objs.CronJobs {
		name := fmt.Sprintf("catalog-reconcile-%d", i)
		assert.Equal(t, cj.Name, name)
		assert.Equal(t, cj.Labels[LabelInstallation], "catalog-reconcile")
		assert.Equal(t, cj.Labels[LabelInstance], name)
		c := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0]
		assert.Assert(t, is.Contains(strings.Join(c.Command, " "), fmt.Sprintf(" --shard %d/3", i)))
		assert.Equal(t, cj.Spec.JobTemplate.Spec.Template.Spec.ServiceAccountName, "catalog-reconcile", "one ServiceAccount for every shard")
	}
	// One shard: no flag, the installation's own name.
	o.Shards = 1
	objs = Build(o)
	assert.Equal(t, objs.CronJobs[0].Name, "catalog-reconcile")
	assert.Assert(t, !strings.Contains(strings.Join(o.Command(0), " "), "--shard"))
}

func TestBuild_ServeMakesADeploymentWithProbesAndABudget(t *testing.T) {
	o := Defaults()
	o.Image = "registry.example/kubectl-catalog:v1"
	o.Serve, o.Replicas, o.MaxDuration = true, 2, 0
	objs := Build(o)
	assert.Equal(t, len(objs.CronJobs), 0)
	assert.Equal(t, len(objs.Deployments), 1)
	d := objs.Deployments[0]
	assert.Equal(t, d.Name, "catalog-reconcile")
	assert.Equal(t, *d.Spec.Replicas, int32(2))
	assert.DeepEqual(t, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	assert.Equal(t, d.Spec.Template.Labels[LabelInstance], "catalog-reconcile")
	spec := d.Spec.Template.Spec
	assert.Equal(t, spec.RestartPolicy, corev1.RestartPolicyAlways)
	assert.Equal(t, *spec.TerminationGracePeriodSeconds, int64(30))
	c := spec.Containers[0]
	assert.DeepEqual(t, c.Command, []string{"kubectl-catalog", "reconcile", "-A", "--serve", "--listen", ":8080", "--workers", "8", "--shard-group", "catalog-reconcile"})
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		assert.Assert(t, p != nil && p.HTTPGet != nil)
		assert.Equal(t, p.HTTPGet.Path, "/healthz")
		assert.Equal(t, p.HTTPGet.Port.String(), "http")
	}
	assert.Equal(t, c.LivenessProbe.FailureThreshold*c.LivenessProbe.PeriodSeconds, int32(300), "five minutes before a restart")
	assert.Equal(t, c.Ports[0].ContainerPort, int32(8080))

	// The same pod as the CronJob's: ServiceAccount, security context, resources.
	cronPod := Build(Defaults()).CronJobs[0].Spec.JobTemplate.Spec.Template.Spec
	assert.Equal(t, spec.ServiceAccountName, cronPod.ServiceAccountName)
	assert.DeepEqual(t, spec.SecurityContext, cronPod.SecurityContext)
	assert.DeepEqual(t, c.SecurityContext, cronPod.Containers[0].SecurityContext)
	assert.DeepEqual(t, c.Resources, cronPod.Containers[0].Resources)
	assert.DeepEqual(t, spec.Volumes, cronPod.Volumes)

	assert.Equal(t, len(objs.PodDisruptionBudgets), 1)
	pdb := objs.PodDisruptionBudgets[0]
	assert.Equal(t, pdb.Spec.MinAvailable.IntValue(), 1)
	assert.DeepEqual(t, pdb.Spec.Selector, d.Spec.Selector)

	// One replica: no budget (it would block every drain). An explicit bound is passed on.
	o.Replicas, o.MaxDuration = 1, time.Minute
	objs = Build(o)
	assert.Equal(t, len(objs.PodDisruptionBudgets), 0)
	assert.Assert(t, is.Contains(strings.Join(objs.Deployments[0].Spec.Template.Spec.Containers[0].Command, " "), "--max-duration 1m"))

	// Several replicas are a shard group named after the Deployment, with a Role on
	// Leases in the catalog namespace only.
	o.Replicas = 3
	objs = Build(o)
	assert.Assert(t, is.Contains(strings.Join(objs.Deployments[0].Spec.Template.Spec.Containers[0].Command, " "), "--shard-group catalog-reconcile"))
	assert.Equal(t, objs.LeaseRole.Namespace, o.TrustNamespace())
	assert.DeepEqual(t, objs.LeaseRole.Rules, LeaseRules())
	assert.DeepEqual(t, objs.LeaseRole.Rules[0].Resources, []string{"leases"})
	assert.Equal(t, objs.LeaseRoleBinding.RoleRef.Name, objs.LeaseRole.Name)
	assert.DeepEqual(t, objs.LeaseRoleBinding.Subjects[0].Name, o.Name)
	for _, p := range Permissions {
		assert.Assert(t, !slices.Contains(p.Resources, "leases"), "nothing cluster-wide on Leases")
	}
	o.Replicas = 1
	assert.Assert(t, Build(o).LeaseRole == nil, "one replica: no group, no Role")

	// Sharded: one Deployment per shard, pods told apart by their selector.
	o.Shards, o.Replicas = 2, 1
	objs = Build(o)
	assert.Equal(t, len(objs.Deployments), 2)
	assert.Equal(t, len(objs.PodDisruptionBudgets), 0)
	assert.Assert(t, objs.Deployments[0].Spec.Selector.MatchLabels[LabelInstance] != objs.Deployments[1].Spec.Selector.MatchLabels[LabelInstance])
	assert.Assert(t, is.Contains(strings.Join(objs.Deployments[1].Spec.Template.Spec.Containers[0].Command, " "), "--shard 1/2"))
}

func TestApply_PrunesWhatTheInstallationNoLongerHasAndUninstallFindsEverything(t *testing.T) {
	ctx := context.Background()
	core := fake.NewClientset()
	o := Defaults()
	o.Image = "example.invalid/kubectl-catalog:test"
	o.NoTrustPolicy = true
	lines := func(rs []Result) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.String())
		}
		return out
	}
	// Another installation in the same namespace is left alone throughout.
	other := o
	other.Name = "other"
	_, err := Apply(ctx, core, Build(other), ApplyOptions{})
	assert.NilError(t, err)

	o.Shards = 3
	_, err = Apply(ctx, core, Build(o), ApplyOptions{})
	assert.NilError(t, err)

	// Three shards to a Deployment with two replicas.
	o.Shards, o.Serve, o.Replicas = 1, true, 2
	res, err := Apply(ctx, core, Build(o), ApplyOptions{})
	assert.NilError(t, err)
	assert.DeepEqual(t, lines(res)[4:], []string{
		"role.rbac.authorization.k8s.io/kubectl-catalog:catalog-system:catalog-reconcile created",
		"rolebinding.rbac.authorization.k8s.io/kubectl-catalog:catalog-system:catalog-reconcile created",
		"deployment.apps/catalog-reconcile created",
		"poddisruptionbudget.policy/catalog-reconcile created",
		"cronjob.batch/catalog-reconcile-0 pruned",
		"cronjob.batch/catalog-reconcile-1 pruned",
		"cronjob.batch/catalog-reconcile-2 pruned",
	})
	// One replica: the budget goes, and the shard group's Role on Leases.
	o.Replicas = 1
	res, err = Apply(ctx, core, Build(o), ApplyOptions{})
	assert.NilError(t, err)
	assert.DeepEqual(t, lines(res)[4:], []string{
		"deployment.apps/catalog-reconcile configured",
		"poddisruptionbudget.policy/catalog-reconcile pruned",
		"role.rbac.authorization.k8s.io/kubectl-catalog:catalog-system:catalog-reconcile pruned",
		"rolebinding.rbac.authorization.k8s.io/kubectl-catalog:catalog-system:catalog-reconcile pruned",
	})
	o.Replicas = 2
	_, err = Apply(ctx, core, Build(o), ApplyOptions{})
	assert.NilError(t, err)

	res, err = Uninstall(ctx, core, o.Namespace, o.Name)
	assert.NilError(t, err)
	assert.DeepEqual(t, lines(res), []string{
		"cronjob.batch/catalog-reconcile not found, skipped",
		"deployment.apps/catalog-reconcile deleted",
		"poddisruptionbudget.policy/catalog-reconcile deleted",
		"role.rbac.authorization.k8s.io/kubectl-catalog:catalog-system:catalog-reconcile deleted",
		"rolebinding.rbac.authorization.k8s.io/kubectl-catalog:catalog-system:catalog-reconcile deleted",
		"networkpolicy.networking.k8s.io/catalog-reconcile not found, skipped",
		"clusterrolebinding.rbac.authorization.k8s.io/kubectl-catalog:catalog-system:catalog-reconcile deleted",
		"clusterrole.rbac.authorization.k8s.io/kubectl-catalog:catalog-system:catalog-reconcile deleted",
		"serviceaccount/catalog-reconcile deleted",
	})
	_, err = core.BatchV1().CronJobs(o.Namespace).Get(ctx, "other", metav1.GetOptions{})
	assert.NilError(t, err, "another installation's CronJob stays")
}
