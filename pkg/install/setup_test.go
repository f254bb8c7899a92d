package install

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
)

func TestSetup_CreatesTheNamespaceClusterIDAndTrustThenFindsThemInPlace(t *testing.T) {
	ctx := context.Background()
	core := fake.NewClientset()
	lines := func(rs []Result) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.String())
			assert.Assert(t, Why(r) != "", "every object says why it is there: %s", r)
		}
		return out
	}
	res, err := Setup(ctx, core, BuildSetup("catalog-system"), ApplyOptions{SkipEnforcementCheck: true})
	assert.NilError(t, err)
	assert.DeepEqual(t, lines(res), []string{
		"namespace/catalog-system created",
		"configmap/catalog-cluster-id created",
		"validatingadmissionpolicy.admissionregistration.k8s.io/kubectl-catalog-record-author created",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/kubectl-catalog-record-author created",
		"configmap/catalog-trust created",
	})
	id, err := core.CoreV1().ConfigMaps("catalog-system").Get(ctx, kube.ClusterIDConfigMap, metav1.GetOptions{})
	assert.NilError(t, err)
	first := id.Data[kube.ClusterIDKey]
	assert.Assert(t, first != "" && first != BuildSetup("catalog-system").ClusterID.Data[kube.ClusterIDKey], "a generated id is stored: %q", first)

	res, err = Setup(ctx, core, BuildSetup("catalog-system"), ApplyOptions{SkipEnforcementCheck: true})
	assert.NilError(t, err)
	for _, r := range res {
		assert.Equal(t, r.Action, Unchanged, r.String())
	}
	id, err = core.CoreV1().ConfigMaps("catalog-system").Get(ctx, kube.ClusterIDConfigMap, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, id.Data[kube.ClusterIDKey], first, "the cluster id is never changed")
}

func TestSetup_KeepsAClusterIDStoredBefore(t *testing.T) {
	ctx := context.Background()
	core := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cat"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.ClusterIDConfigMap, Namespace: "cat"}, Data: map[string]string{kube.ClusterIDKey: "before"}},
	)
	res, err := Setup(ctx, core, BuildSetup("cat"), ApplyOptions{SkipEnforcementCheck: true})
	assert.NilError(t, err)
	assert.Equal(t, res[0].String(), "namespace/cat unchanged")
	assert.Equal(t, res[1].String(), "configmap/catalog-cluster-id unchanged")
	id, err := core.CoreV1().ConfigMaps("cat").Get(ctx, kube.ClusterIDConfigMap, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, id.Data[kube.ClusterIDKey], "before")
}

func TestMissingForSetup_NamesWhatIsDeniedAndWhy(t *testing.T) {
	ctx := context.Background()
	core := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cat"}})
	core.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authzv1.SelfSubjectAccessReview)
		r.Status.Allowed = r.Spec.ResourceAttributes.Resource == "configmaps"
		return true, r, nil
	})
	missing, err := MissingForSetup(ctx, core, "cat")
	assert.NilError(t, err)
	assert.DeepEqual(t, missing, []string{
		"patch validatingadmissionpolicies.admissionregistration.k8s.io (to install the trust policy)",
		"patch validatingadmissionpolicybindings.admissionregistration.k8s.io (to put the trust policy in force)",
	})
}

// Uninstalling reconcile leaves the catalog's set-up alone: installed again, or set up
// again with init, the token in place is kept, and records keep their verified author.
// Only a policy or binding that had to be created anew renews it, saying which token it
// replaced.
func TestReinstall_KeepsTheTokenInPlace_RenewsOnlyAfterThePolicyWasMissing(t *testing.T) {
	ctx := context.Background()
	core := fake.NewClientset()
	o := Defaults()
	o.Image = "example.invalid/kubectl-catalog:test"
	token := func() string {
		t.Helper()
		tok, err := CurrentToken(ctx, core, o.TrustNamespace())
		assert.NilError(t, err)
		return tok
	}
	_, err := Apply(ctx, core, Build(o), ApplyOptions{SkipEnforcementCheck: true})
	assert.NilError(t, err)
	first := token()
	assert.Assert(t, first != "")

	_, err = Uninstall(ctx, core, o.Namespace, o.Name)
	assert.NilError(t, err)
	assert.Equal(t, token(), first, "uninstalling reconcile keeps the token")
	for _, again := range []func() ([]Result, error){
		func() ([]Result, error) { return Apply(ctx, core, Build(o), ApplyOptions{SkipEnforcementCheck: true}) },
		func() ([]Result, error) {
			return Setup(ctx, core, BuildSetup(o.TrustNamespace()), ApplyOptions{SkipEnforcementCheck: true})
		},
	} {
		res, err := again()
		assert.NilError(t, err)
		assert.Equal(t, res[len(res)-1].String(), "configmap/catalog-trust unchanged")
		assert.Equal(t, Replaced(res), "")
		assert.Equal(t, token(), first)
	}

	// The binding deleted behind the token's back: the token may be on forged records.
	assert.NilError(t, core.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, "kubectl-catalog-record-author", metav1.DeleteOptions{}))
	res, err := Setup(ctx, core, BuildSetup(o.TrustNamespace()), ApplyOptions{SkipEnforcementCheck: true})
	assert.NilError(t, err)
	assert.Equal(t, res[len(res)-1].String(), "configmap/catalog-trust created anew (new token)")
	assert.Equal(t, Replaced(res), first)
	assert.Assert(t, token() != first)
}

type stampCounts map[string]int

func (c stampCounts) StampedCounts(ctx context.Context, namespace, token string) (map[string]int, error) {
	return c, nil
}

func TestStranded_NamesEachNamespaceWithItsAdoptCommand(t *testing.T) {
	lines, err := Stranded(context.Background(), stampCounts{"team-b": 3, "team-a": 1}, "tok")
	assert.NilError(t, err)
	assert.DeepEqual(t, lines, []string{
		"namespace team-a: 1 record: kubectl catalog adopt -n team-a",
		"namespace team-b: 3 records: kubectl catalog adopt -n team-b",
	})
	_, err = Stranded(context.Background(), nil, "tok")
	assert.ErrorContains(t, err, "cannot be listed")
}
