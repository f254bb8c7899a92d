package authority

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

func TestRefusalFix_NamesTheMessagesCommand_ElseAdoptForAnAuthorRefusal(t *testing.T) {
	for _, tc := range []struct{ reason, message, want string }{
		{ReasonRefusedPlanNotAllowed, `an administrator enables it with "kubectl catalog access enable c/p -n a"`, "kubectl catalog access enable c/p -n a"},
		{ReasonRefusedAuthorUnverified, "no one vouches for its author", "kubectl catalog adopt -n a"},
		{ReasonRefusedNotAuthorized, "the record's author may not", "kubectl catalog adopt -n a"},
		{ReasonRefusedNotShared, "its owner changes the spec", ""},
	} {
		assert.Equal(t, RefusalFix(tc.reason, tc.message, "a"), tc.want, tc.reason)
	}
}

func TestCompareAdoption_AClaimFirst_ThenTheEarlierClaim_ThenTheOlderRecord(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Second))
	claimed := store.IDUser{UID: "a", Created: t1, Adopted: t1, AdoptedVersion: "7"}
	older := store.IDUser{UID: "b", Created: t0}
	c, known := compareAdoption(claimed, older)
	assert.Assert(t, c < 0 && known, "a record with a claim comes before one without")
	sameSecond := store.IDUser{UID: "c", Created: t0, Adopted: t1, AdoptedVersion: "9"}
	c, known = compareAdoption(claimed, sameSecond)
	assert.Assert(t, c < 0 && known, "in the same second, the lower resourceVersion first")
	unknown := store.IDUser{UID: "d", Created: t0, Adopted: t1, AdoptedVersion: "x"}
	_, known = compareAdoption(claimed, unknown)
	assert.Assert(t, !known, "resourceVersions that are not numbers order nothing")
	c, known = compareAdoption(older, store.IDUser{UID: "e", Created: t1})
	assert.Assert(t, c < 0 && known, "without claims, the older record first")
}

func TestTampered_AuthorAnnotationsWithoutTheLabel(t *testing.T) {
	inst := &v1alpha1.ServiceInstance{}
	assert.Equal(t, Tampered(inst), "", "a record without author annotations")
	inst.Annotations = map[string]string{store.AnnotationAuthor: "bob"}
	assert.Assert(t, Tampered(inst) != "", "author annotations, no managed-by label")
	inst.Labels = map[string]string{store.LabelManagedBy: store.ManagedBy}
	assert.Equal(t, Tampered(inst), "", "both, as kubectl catalog writes them")
}

func TestLets_ItsOwnNamespaceAndTheSharedOnes_WithinTheAllowed(t *testing.T) {
	inst := &v1alpha1.ServiceInstance{}
	inst.Namespace = "a"
	inst.Spec.SharedWith = []string{"b"}
	assert.Assert(t, Lets(inst, "a") && Lets(inst, "b") && !Lets(inst, "c"))
	inst.Spec.AllowedNamespaces = []string{"b"}
	assert.Assert(t, !Lets(inst, "a") && Lets(inst, "b"))
}
