package graph

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func instance(ns, name string, scope v1alpha1.Scope, broker, class, plan string, phase v1alpha1.Phase) *v1alpha1.ServiceInstance {
	return &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{
			Scope: scope, BrokerName: broker, ClassExternalName: class, ClassID: class + "-id",
			PlanExternalName: plan, PlanID: plan + "-id", ExternalID: name + "-id",
		},
		Status: v1alpha1.ServiceInstanceStatus{OperationStatus: v1alpha1.OperationStatus{Phase: phase}},
	}
}

func binding(ns, name, instNS, inst, secret string) *v1alpha1.ServiceBinding {
	b := &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ServiceBindingSpec{InstanceName: inst, InstanceNamespace: instNS, SecretName: secret, ExternalID: name + "-id"},
		Status:     v1alpha1.ServiceBindingStatus{OperationStatus: v1alpha1.OperationStatus{Phase: v1alpha1.PhaseReady}},
	}
	return b
}

// fixture is namespace team-a: instances db and orders of its own broker acme, files of
// the cluster broker shared (still provisioning), and old being deleted; bindings of
// each, one of team-b's shared instance shop, and one of an instance that is gone;
// Deployment web reading the Secrets of db, orders and shop; CronJob reports reading
// files'; Pod debug reading db's; StatefulSet cache reading no binding's Secret.
func fixture() Input {
	old := instance("team-a", "old", v1alpha1.ScopeNamespace, "acme", "postgresql", "hobby", v1alpha1.PhaseDeprovisioning)
	old.DeletionTimestamp = &metav1.Time{}
	dbWeb := binding("team-a", "db-web", "", "db", "db-web")
	dbWeb.Status.Secret = &v1alpha1.CredentialsSecret{Name: "db-web"}
	pending := binding("team-a", "files-reports", "", "files", "files-reports")
	pending.Status.Phase = v1alpha1.PhaseBinding
	return Input{
		Instances: []*v1alpha1.ServiceInstance{
			instance("team-a", "db", v1alpha1.ScopeNamespace, "acme", "postgresql", "hobby", v1alpha1.PhaseReady),
			instance("team-a", "orders", v1alpha1.ScopeNamespace, "acme", "postgresql", "standard", v1alpha1.PhaseReady),
			instance("team-a", "files", v1alpha1.ScopeCluster, "shared", "object-storage", "bucket", v1alpha1.PhaseProvisioning),
			old,
		},
		Bindings: []*v1alpha1.ServiceBinding{
			dbWeb,
			binding("team-a", "orders-web", "", "orders", "orders-creds"),
			pending,
			binding("team-a", "shop-web", "team-b", "shop", "shop"),
			binding("team-a", "ghost", "", "gone", "ghost"),
			binding("team-a", "no-secret-yet", "", "old", ""),
		},
		Workloads: []Workload{
			{Kind: "Deployment", Namespace: "team-a", Name: "web", Secrets: map[string][]string{
				"db-web": {ViaEnv}, "orders-creds": {ViaVolume}, "shop": {ViaEnvFrom}, "unrelated": {ViaVolume},
			}},
			{Kind: "CronJob", Namespace: "team-a", Name: "reports", Secrets: map[string][]string{"files-reports": {ViaEnvFrom, ViaVolume}}},
			{Kind: "Pod", Namespace: "team-a", Name: "debug", Secrets: map[string][]string{"db-web": {ViaEnv}}},
			{Kind: "StatefulSet", Namespace: "team-a", Name: "cache", Secrets: map[string][]string{"cache-password": {ViaEnv}}},
			// A Secret of the same name in another namespace is another Secret.
			{Kind: "Deployment", Namespace: "team-c", Name: "web", Secrets: map[string][]string{"db-web": {ViaEnv}}},
		},
		Listed:   []string{"team-a"},
		Warnings: []string{"could not list daemonsets in team-a: forbidden"},
	}
}

func edgesFrom(g *Graph, kind string) []string {
	var out []string
	for _, e := range g.Edges {
		if e.Kind == kind {
			s := e.From + " -> " + e.To
			if len(e.Via) > 0 {
				s += " " + strings.Join(e.Via, ",")
			}
			out = append(out, s)
		}
	}
	return out
}

func TestAssemble_Edges(t *testing.T) {
	g := Assemble(fixture())
	assert.DeepEqual(t, edgesFrom(g, EdgeProvisions), []string{
		"plan//shared/object-storage/bucket -> instance/team-a/files",
		"plan/team-a/acme/postgresql/hobby -> instance/team-a/db",
		"plan/team-a/acme/postgresql/hobby -> instance/team-a/old",
		"plan/team-a/acme/postgresql/standard -> instance/team-a/orders",
	})
	assert.DeepEqual(t, edgesFrom(g, EdgeOffers), []string{
		"broker//shared -> class//shared/object-storage",
		"broker/team-a/acme -> class/team-a/acme/postgresql",
		"class//shared/object-storage -> plan//shared/object-storage/bucket",
		"class/team-a/acme/postgresql -> plan/team-a/acme/postgresql/hobby",
		"class/team-a/acme/postgresql -> plan/team-a/acme/postgresql/standard",
	})
	assert.DeepEqual(t, edgesFrom(g, EdgeBinds), []string{
		"instance/team-a/db -> binding/team-a/db-web",
		"instance/team-a/files -> binding/team-a/files-reports",
		"instance/team-a/gone -> binding/team-a/ghost",
		"instance/team-a/old -> binding/team-a/no-secret-yet",
		"instance/team-a/orders -> binding/team-a/orders-web",
		"instance/team-b/shop -> binding/team-a/shop-web",
	})
	assert.DeepEqual(t, edgesFrom(g, EdgeWrites), []string{
		"binding/team-a/db-web -> secret/team-a/db-web",
		"binding/team-a/files-reports -> secret/team-a/files-reports",
		"binding/team-a/ghost -> secret/team-a/ghost",
		"binding/team-a/orders-web -> secret/team-a/orders-creds",
		"binding/team-a/shop-web -> secret/team-a/shop",
	})
	assert.DeepEqual(t, edgesFrom(g, EdgeConsumedBy), []string{
		"secret/team-a/db-web -> deployment/team-a/web env",
		"secret/team-a/db-web -> pod/team-a/debug env",
		"secret/team-a/files-reports -> cronjob/team-a/reports envFrom,volume",
		"secret/team-a/orders-creds -> deployment/team-a/web volume",
		"secret/team-a/shop -> deployment/team-a/web envFrom",
	})
	assert.DeepEqual(t, edgesFrom(g, EdgeSharesConsumer), []string{
		"instance/team-a/db -> instance/team-a/orders deployment/team-a/web",
		"instance/team-a/db -> instance/team-b/shop deployment/team-a/web",
		"instance/team-a/orders -> instance/team-b/shop deployment/team-a/web",
	})
	for id, detail := range map[string]string{
		"instance/team-a/db": "Ready", "instance/team-a/files": "Provisioning", "instance/team-a/old": "Deleting",
		"instance/team-a/gone": "not found", "instance/team-b/shop": "", "binding/team-a/files-reports": "Binding",
	} {
		n, ok := g.Node(id)
		assert.Assert(t, ok, id)
		assert.Equal(t, n.Detail, detail, id)
	}
	for _, id := range []string{"statefulset/team-a/cache", "deployment/team-c/web", "secret/team-a/unrelated"} {
		_, ok := g.Node(id)
		assert.Assert(t, !ok, "%s consumes no binding's Secret", id)
	}
	assert.DeepEqual(t, g.Warnings, []string{"could not list daemonsets in team-a: forbidden"})
}

func TestAssemble_SharesConsumerNeedsTwoInstances(t *testing.T) {
	// Two bindings of one instance read by one workload: no edge from the instance to
	// itself.
	g := Assemble(Input{
		Instances: []*v1alpha1.ServiceInstance{instance("ns", "db", v1alpha1.ScopeNamespace, "b", "c", "p", v1alpha1.PhaseReady)},
		Bindings:  []*v1alpha1.ServiceBinding{binding("ns", "one", "", "db", "one"), binding("ns", "two", "", "db", "two")},
		Workloads: []Workload{{Kind: "Job", Namespace: "ns", Name: "j", Secrets: map[string][]string{"one": {ViaEnv}, "two": {ViaEnv}}}},
	})
	assert.Assert(t, is.Len(edgesFrom(g, EdgeSharesConsumer), 0))
	assert.Equal(t, len(edgesFrom(g, EdgeConsumedBy)), 2)
}

func TestAssemble_UserProvidedInstanceHasNoBroker(t *testing.T) {
	ups := instance("ns", "legacy", "", "", "", "", v1alpha1.PhaseReady)
	ups.Spec.UserProvided = &v1alpha1.UserProvidedService{CredentialsSecret: "legacy-credentials"}
	g := Assemble(Input{
		Instances: []*v1alpha1.ServiceInstance{ups},
		Bindings:  []*v1alpha1.ServiceBinding{binding("ns", "app", "", "legacy", "app")},
	})
	for _, n := range g.Nodes {
		assert.Assert(t, n.Kind != KindBroker && n.Kind != KindClass && n.Kind != KindPlan, "%+v", n)
	}
	n, ok := g.Node(NodeID(KindInstance, "ns", "legacy"))
	assert.Assert(t, ok)
	assert.Equal(t, n.Detail, "user-provided, Ready")
	assert.Equal(t, len(edgesFrom(g, EdgeBinds)), 1)
}

func TestAssemble_IsDeterministic(t *testing.T) {
	var first bytes.Buffer
	assert.NilError(t, JSON(&first, Assemble(fixture())))
	for range 20 {
		in := fixture()
		// Reverse every input list: the graph does not depend on their order.
		for i, j := 0, len(in.Bindings)-1; i < j; i, j = i+1, j-1 {
			in.Bindings[i], in.Bindings[j] = in.Bindings[j], in.Bindings[i]
		}
		for i, j := 0, len(in.Workloads)-1; i < j; i, j = i+1, j-1 {
			in.Workloads[i], in.Workloads[j] = in.Workloads[j], in.Workloads[i]
		}
		var again bytes.Buffer
		assert.NilError(t, JSON(&again, Assemble(in)))
		assert.Equal(t, again.String(), first.String())
	}
}

func TestRender_Golden(t *testing.T) {
	g := Assemble(fixture())
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			var out bytes.Buffer
			assert.NilError(t, Render(&out, g, format))
			golden.Assert(t, out.String(), "graph."+format+".golden")
		})
	}
	err := Render(&bytes.Buffer{}, g, "yaml")
	assert.ErrorContains(t, err, `unknown output format "yaml"`)
}

func TestRender_TreeOfOneNamespaceOmitsIt(t *testing.T) {
	in := fixture()
	in.Bindings = in.Bindings[:3] // none of team-b's instance
	in.Workloads = in.Workloads[:4]
	var out bytes.Buffer
	assert.NilError(t, Tree(&out, Assemble(in)))
	golden.Assert(t, out.String(), "graph-one-namespace.tree.golden")
	assert.Assert(t, !strings.Contains(out.String(), "team-a/"), out.String())
}

func TestNeighbourhood(t *testing.T) {
	n := Assemble(fixture()).Neighbourhood(NodeID(KindInstance, "team-a", "db"))
	var ids []string
	for _, x := range n.Nodes {
		ids = append(ids, x.ID)
	}
	assert.DeepEqual(t, ids, []string{
		"binding/team-a/db-web",
		"broker/team-a/acme",
		"class/team-a/acme/postgresql",
		"deployment/team-a/web",
		"instance/team-a/db",
		"instance/team-a/orders",
		"instance/team-b/shop",
		"plan/team-a/acme/postgresql/hobby",
		"pod/team-a/debug",
		"secret/team-a/db-web",
	})
	assert.DeepEqual(t, edgesFrom(n, EdgeSharesConsumer), []string{
		"instance/team-a/db -> instance/team-a/orders deployment/team-a/web",
		"instance/team-a/db -> instance/team-b/shop deployment/team-a/web",
	})
}

// buildCluster is a fake cluster holding the fixture's records and these workloads of
// team-a: Deployment web (env of db-web, volume of orders-creds), CronJob reports
// (envFrom of files-reports), the Job the CronJob made, a bare Pod and a Pod of a
// ReplicaSet (both with env of db-web), and a Deployment using no binding's Secret.
func buildCluster(t *testing.T) *storetest.Cluster {
	t.Helper()
	tmpl := func(spec corev1.PodSpec) corev1.PodTemplateSpec { return corev1.PodTemplateSpec{Spec: spec} }
	envSpec := corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{secretEnv("db-web")}}}}
	owner := metav1.OwnerReference{Kind: "ReplicaSet", Name: "web-1", Controller: ptr.To(true)}
	cronOwner := metav1.OwnerReference{Kind: "CronJob", Name: "reports", Controller: ptr.To(true)}
	filesSpec := corev1.PodSpec{Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{envFrom("files-reports")}}}}
	cl := storetest.NewCluster(
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}, Spec: appsv1.DeploymentSpec{Template: tmpl(corev1.PodSpec{
			Volumes:    []corev1.Volume{secretVolume("orders-creds")},
			Containers: []corev1.Container{{Env: []corev1.EnvVar{secretEnv("db-web")}}},
		})}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "other"}, Spec: appsv1.DeploymentSpec{Template: tmpl(corev1.PodSpec{
			Volumes: []corev1.Volume{secretVolume("unrelated")},
		})}},
		&batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "reports"}, Spec: batchv1.CronJobSpec{
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl(filesSpec)}},
		}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "reports-1", OwnerReferences: []metav1.OwnerReference{cronOwner}}, Spec: batchv1.JobSpec{Template: tmpl(filesSpec)}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "debug"}, Spec: envSpec},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web-1-abc", OwnerReferences: []metav1.OwnerReference{owner}}, Spec: envSpec},
	)
	st := cl.Store()
	ctx := store.WithIntent(context.Background())
	in := fixture()
	for _, i := range in.Instances {
		i.DeletionTimestamp = nil
		_, err := st.Instances().Create(ctx, i)
		assert.NilError(t, err)
	}
	for _, b := range in.Bindings {
		_, err := st.Bindings().Create(ctx, b)
		assert.NilError(t, err)
	}
	return cl
}

// lists records the LIST requests of each resource and fails those of forbid.
func lists(cl *storetest.Cluster, forbid ...string) map[string][]metav1.ListOptions {
	seen := map[string][]metav1.ListOptions{}
	cl.Core.PrependReactor("list", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		r := a.GetResource().Resource
		seen[r] = append(seen[r], a.(clienttesting.ListActionImpl).ListOptions)
		for _, f := range forbid {
			if f == r {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: a.GetResource().Group, Resource: r}, "", nil)
			}
		}
		return false, nil, nil
	})
	return seen
}

func TestBuild_OneListPerKind_NoSecretRead(t *testing.T) {
	cl := buildCluster(t)
	seen := lists(cl)
	g, err := Build(context.Background(), cl.Core, cl.Store(), Options{Namespace: "team-a"})
	assert.NilError(t, err)
	for _, r := range []string{"deployments", "statefulsets", "daemonsets", "jobs", "cronjobs", "pods"} {
		assert.Equal(t, len(seen[r]), 1, "one LIST of %s", r)
		assert.Equal(t, seen[r][0].Limit, int64(PageSize), "the LIST of %s is paginated", r)
	}
	assert.Equal(t, len(seen["configmaps"]), 2, "one LIST of instance records, one of binding records")
	for _, a := range cl.Core.Actions() {
		assert.Assert(t, a.GetResource().Resource != "secrets", "%s %s", a.GetVerb(), a.GetResource().Resource)
	}
	assert.DeepEqual(t, edgesFrom(g, EdgeConsumedBy), []string{
		"secret/team-a/db-web -> deployment/team-a/web env",
		"secret/team-a/db-web -> pod/team-a/debug env",
		"secret/team-a/files-reports -> cronjob/team-a/reports envFrom",
		"secret/team-a/orders-creds -> deployment/team-a/web volume",
	})
	assert.Assert(t, is.Len(g.Warnings, 0))
}

func TestBuild_ForbiddenListBecomesAWarning(t *testing.T) {
	cl := buildCluster(t)
	lists(cl, "deployments", "daemonsets")
	g, err := Build(context.Background(), cl.Core, cl.Store(), Options{Namespace: "team-a"})
	assert.NilError(t, err)
	assert.DeepEqual(t, g.Warnings, []string{
		"could not list daemonsets in team-a: forbidden",
		"could not list deployments in team-a: forbidden",
	})
	assert.DeepEqual(t, edgesFrom(g, EdgeConsumedBy), []string{
		"secret/team-a/db-web -> pod/team-a/debug env",
		"secret/team-a/files-reports -> cronjob/team-a/reports envFrom",
	})
	assert.Equal(t, len(edgesFrom(g, EdgeBinds)), 6, "the records are all there")
}

// A graph of a namespace (or of every namespace) whose records the user may not list is
// no empty graph: it is the forbidden error "get" gives, not a success.
func TestBuild_NoRecordMayBeListed_IsTheForbiddenError(t *testing.T) {
	for _, o := range []Options{{AllNamespaces: true}, {Namespace: "team-a"}} {
		cl := buildCluster(t)
		seen := lists(cl, "configmaps")
		_, err := Build(context.Background(), cl.Core, cl.Store(), o)
		assert.Assert(t, store.IsForbidden(err), "%+v: %v", o, err)
		assert.Equal(t, len(seen["deployments"]), 0, "without bindings no workload is listed")
	}
}

// When only the instances may not be listed, the bindings still show, with a warning.
func TestBuild_InstancesForbidden_BindingsListed_IsAWarning(t *testing.T) {
	cl := buildCluster(t)
	cl.Core.PrependReactor("list", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if strings.Contains(a.(clienttesting.ListActionImpl).ListOptions.LabelSelector, "=ServiceInstance") {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", nil)
		}
		return false, nil, nil
	})
	g, err := Build(context.Background(), cl.Core, cl.Store(), Options{Namespace: "team-a"})
	assert.NilError(t, err)
	assert.DeepEqual(t, g.Warnings, []string{"could not list instances in team-a: forbidden"})
	assert.Assert(t, len(edgesFrom(g, EdgeBinds)) > 0, "the bindings are shown")
}

func TestBuild_OtherFailuresFail(t *testing.T) {
	cl := buildCluster(t)
	cl.Core.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	})
	_, err := Build(context.Background(), cl.Core, cl.Store(), Options{Namespace: "team-a"})
	assert.ErrorContains(t, err, "cannot list pods")
}

func TestForInstance_UsedBy(t *testing.T) {
	cl := buildCluster(t)
	seen := lists(cl, "deployments")
	db := fixture().Instances[0]
	// db's own binding, and one a consumer namespace holds of it.
	own := binding("team-a", "db-web", "", "db", "db-web")
	other := binding("team-b", "shop-db", "team-a", "db", "shop-db")
	g, err := ForInstance(context.Background(), cl.Core, db, []*v1alpha1.ServiceBinding{own, other})
	assert.NilError(t, err)
	for _, r := range []string{"statefulsets", "daemonsets", "jobs", "cronjobs", "pods"} {
		assert.Equal(t, len(seen[r]), 2, "one LIST of %s in each binding's namespace", r)
	}
	var out bytes.Buffer
	assert.NilError(t, UsedBy(&out, g, NodeID(KindInstance, "team-a", "db")))
	assert.Equal(t, out.String(), `Used by:
  Binding db-web, Secret db-web: Pod debug [env]
  Binding team-b/shop-db, Secret shop-db: no workload found
  Not shown: could not list deployments in team-a: forbidden
  Not shown: could not list deployments in team-b: forbidden
`)

	out.Reset()
	g, err = ForInstance(context.Background(), cl.Core, db, nil)
	assert.NilError(t, err)
	assert.NilError(t, UsedBy(&out, g, NodeID(KindInstance, "team-a", "db")))
	assert.Equal(t, out.String(), "Used by:\n  no binding\n")
}

func TestBuild_UnreadableRecordBecomesAWarning(t *testing.T) {
	cl := buildCluster(t)
	_, err := cl.Core.CoreV1().ConfigMaps("team-a").Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "team-a", Name: store.ConfigMapName(v1alpha1.KindServiceBinding, "mangled"),
			Labels: map[string]string{store.LabelKind: v1alpha1.KindServiceBinding},
		},
		Data: map[string]string{"record": "{not json"},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	g, err := Build(context.Background(), cl.Core, cl.Store(), Options{Namespace: "team-a"})
	assert.NilError(t, err)
	assert.Equal(t, len(g.Warnings), 1, "%v", g.Warnings)
	assert.Assert(t, is.Contains(g.Warnings[0], "mangled"))
	assert.Equal(t, len(edgesFrom(g, EdgeBinds)), 6, "the readable bindings are all there")
}

func TestBuild_FollowsContinueTokens(t *testing.T) {
	cl := buildCluster(t)
	// Deployments come one a page: web, then api (env of orders-creds), then the end.
	api := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "api"}, Spec: appsv1.DeploymentSpec{
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{secretEnv("orders-creds")}}}}},
	}}
	web, err := cl.Core.AppsV1().Deployments("team-a").Get(context.Background(), "web", metav1.GetOptions{})
	assert.NilError(t, err)
	var continues []string
	cl.Core.PrependReactor("list", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		o := a.(clienttesting.ListActionImpl).ListOptions
		continues = append(continues, o.Continue)
		switch o.Continue {
		case "":
			return true, &appsv1.DeploymentList{ListMeta: metav1.ListMeta{Continue: "page-2"}, Items: []appsv1.Deployment{*web}}, nil
		case "page-2":
			return true, &appsv1.DeploymentList{Items: []appsv1.Deployment{api}}, nil
		}
		return true, nil, apierrors.NewBadRequest("unknown continue token " + o.Continue)
	})
	g, err := Build(context.Background(), cl.Core, cl.Store(), Options{Namespace: "team-a"})
	assert.NilError(t, err)
	assert.DeepEqual(t, continues, []string{"", "page-2"})
	assert.DeepEqual(t, edgesFrom(g, EdgeConsumedBy), []string{
		"secret/team-a/db-web -> deployment/team-a/web env",
		"secret/team-a/db-web -> pod/team-a/debug env",
		"secret/team-a/files-reports -> cronjob/team-a/reports envFrom",
		"secret/team-a/orders-creds -> deployment/team-a/api env",
		"secret/team-a/orders-creds -> deployment/team-a/web volume",
	})
}

// sharedCluster is namespace team-a with instance db shared with team-b and team-c;
// team-b holds binding db-app (and a same-named instance db of its own with binding
// own-db), used by its Deployment app; team-c holds nothing of db.
func sharedCluster(t *testing.T) *storetest.Cluster {
	t.Helper()
	cl := storetest.NewCluster(
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "app"}, Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Env: []corev1.EnvVar{secretEnv("db-app")}}},
		}}}},
	)
	ctx := store.WithIntent(context.Background())
	db := instance("team-a", "db", v1alpha1.ScopeNamespace, "acme", "postgresql", "hobby", v1alpha1.PhaseReady)
	db.Spec.SharedWith = []string{"team-b", "team-c"}
	for _, i := range []*v1alpha1.ServiceInstance{db, instance("team-b", "db", v1alpha1.ScopeNamespace, "acme", "postgresql", "hobby", v1alpha1.PhaseReady)} {
		_, err := cl.Store().Instances().Create(ctx, i)
		assert.NilError(t, err)
	}
	for _, b := range []*v1alpha1.ServiceBinding{binding("team-b", "db-app", "team-a", "db", "db-app"), binding("team-b", "own-db", "", "db", "own-db")} {
		_, err := cl.Store().Bindings().Create(ctx, b)
		assert.NilError(t, err)
	}
	return cl
}

func TestBuild_OneNamespaceShowsTheBindingsOfItsSharedInstancesElsewhere(t *testing.T) {
	cl := sharedCluster(t)
	seen := lists(cl)
	g, err := Build(context.Background(), cl.Core, cl.Store(), Options{Namespace: "team-a"})
	assert.NilError(t, err)
	assert.DeepEqual(t, edgesFrom(g, EdgeBinds), []string{"instance/team-a/db -> binding/team-b/db-app"})
	assert.DeepEqual(t, edgesFrom(g, EdgeConsumedBy), []string{"secret/team-b/db-app -> deployment/team-b/app env"})
	assert.Assert(t, is.Len(g.Warnings, 0))
	// Workloads are listed only where a consumer binding was found (team-b, not team-c).
	assert.Equal(t, len(seen["deployments"]), 1)
	for _, a := range cl.Core.Actions() {
		assert.Assert(t, a.GetResource().Resource != "secrets", "%s %s", a.GetVerb(), a.GetResource().Resource)
		if a.GetVerb() == "list" && a.GetResource().Resource == "configmaps" && a.GetNamespace() != "team-a" {
			sel := a.(clienttesting.ListActionImpl).ListOptions.LabelSelector
			assert.Assert(t, is.Contains(sel, store.LabelInstanceNamespace+"=team-a"), "a LIST of another namespace's records selects the bindings of team-a's instances: %s", sel)
		}
	}
}

func TestBuild_ConsumersAnotherNamespaceHidesBecomeAWarning(t *testing.T) {
	cl := sharedCluster(t)
	cl.Core.PrependReactor("list", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "team-b" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", nil)
		}
		return false, nil, nil
	})
	g, err := Build(context.Background(), cl.Core, cl.Store(), Options{Namespace: "team-a"})
	assert.NilError(t, err)
	assert.DeepEqual(t, g.Warnings, []string{"could not list bindings in team-b, which instances of team-a are shared with: forbidden"})
	assert.Assert(t, is.Len(edgesFrom(g, EdgeBinds), 0))
}
