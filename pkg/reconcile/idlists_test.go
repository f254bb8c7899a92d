package reconcile

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// idLists counts the lists of one OSB id's users (a label-selected list of its id
// label) the metadata client sent.
func (f *fixture) idLists() int {
	n := 0
	for _, sel := range f.cluster.MetadataSelectors() {
		if strings.Contains(sel, store.IDLabelPrefix) {
			n++
		}
	}
	return n
}

// Between full passes, the id checks of many records with work in one namespace are
// answered by one list of that namespace's instances and bindings, not by a list per
// record, nor by a full pass: the records of other namespaces are not read. Each
// scope of broker, and instances and bindings alike.
func TestRun_BetweenFullPasses_ManyRecordsOfANamespace_OneListOfIt(t *testing.T) {
	for _, scope := range []v1alpha1.Scope{v1alpha1.ScopeCluster, v1alpha1.ScopeNamespace} {
		t.Run(string(scope), func(t *testing.T) {
			f := newFixture(t)
			if scope == v1alpha1.ScopeNamespace {
				f.namespaceBroker()
			}
			f.provisioned("db")
			const others = 40
			for i := range others {
				other := fmt.Sprintf("team-%02d", i%4)
				f.instanceWithID(other, fmt.Sprintf("settled-%02d", i), v1alpha1.NewNamespaceBoundID(other))
			}
			// The first run of the process was a full pass; the next is due in an hour.
			f.run(fullPassEvery())
			f.now = f.now.Add(time.Minute)
			n := 100
			for i := range n {
				f.instanceOf(scope, fmt.Sprintf("new-%02d", i))
			}
			f.binding("creds")
			f.bindAnswers("s3cret", time.Time{})
			f.broker.ResetCalls()
			items, lists := f.cluster.MetadataItems(), f.cluster.MetadataLists()
			idLists := f.idLists()

			sum := f.run(fullPassEvery())

			assert.Equal(t, sum.Counts[Done], n+1, "%+v", sum.Items)
			assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), n)
			// The pending records, then the namespace's instances, bindings and
			// their claims (n+1 pending, n+3 of the namespace): none of the other
			// namespaces' records.
			read := f.cluster.MetadataItems() - items
			assert.Assert(t, read <= 2*(n+1)+2, "read the metadata of %d records", read)
			assert.Equal(t, f.idLists()-idLists, 0, "no list per record")
			assert.Assert(t, f.cluster.MetadataLists()-lists <= 12, "%d lists", f.cluster.MetadataLists()-lists)
		})
	}
}

// instanceOf creates a pending instance of the cluster broker or of the namespace's own
// broker (scope), with an OSB id bound to its namespace, as provision gives one.
func (f *fixture) instanceOf(scope v1alpha1.Scope, name string) {
	f.t.Helper()
	broker := brokerN
	if scope == v1alpha1.ScopeNamespace {
		broker = teamBroker
	}
	_, err := f.st.Instances().Create(context.Background(), &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: scope, BrokerName: broker, ClassExternalName: "db",
			ClassID: classID, PlanExternalName: "small", PlanID: planID, ExternalID: v1alpha1.NewNamespaceBoundID(ns)},
	})
	assert.NilError(f.t, err)
}

// The id checks answered by the lists of the namespaces with many records with work
// refuse what a full pass's refuse: a copy of an older record's id bound to the
// namespace, a copy of an id bound to nothing adopted first in another namespace (still
// checked over every namespace), and a copy of an id another namespace's record holds
// (bound to that namespace: not the copy's own). The other records are driven.
func TestRun_BetweenFullPasses_NamespaceListsRefuseAsAFullPass(t *testing.T) {
	for _, fullPass := range []bool{true, false} {
		t.Run(fmt.Sprintf("full pass %v", fullPass), func(t *testing.T) {
			f := newFixture(t)
			owned := v1alpha1.NewNamespaceBoundID(ns)
			f.instanceWithID(ns, "owner", owned)
			f.instanceWithID("team-z", "adopter", "osb-adopted")
			theirs := v1alpha1.NewNamespaceBoundID("team-z")
			f.instanceWithID("team-z", "theirs", theirs)
			assert.Equal(t, f.run(fullPassEvery()).Counts[Done], 3)
			f.broker.ResetCalls()
			f.now = f.now.Add(time.Minute)
			f.instanceWithID(ns, "copy", owned)
			f.instanceWithID(ns, "adopted-copy", "osb-adopted")
			f.instanceWithID(ns, "theirs-copy", theirs)
			for i := range IDChecksPerNamespace {
				f.instance(fmt.Sprintf("new-%02d", i))
			}
			if fullPass {
				f.now = f.now.Add(2 * time.Hour)
			}
			idLists := f.idLists()

			sum := f.run(fullPassEvery())

			for _, name := range []string{"copy", "adopted-copy", "theirs-copy"} {
				assert.Equal(t, f.item(sum, name).Outcome, Refused, "%s: %s", name, f.item(sum, name).Detail)
			}
			assert.Equal(t, sum.Counts[Done], IDChecksPerNamespace, "%+v", sum.Items)
			assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), IDChecksPerNamespace)
			if !fullPass {
				// Lists of one id's users: the id bound to nothing's (its check, and
				// again once its claim is made, over every namespace), and the copy's
				// of the namespace's id (a refusal is never made on the index alone);
				// none for the records the index clears.
				lists := f.idLists() - idLists
				assert.Assert(t, lists >= 2 && lists <= 3, "%d", lists)
			}
		})
	}
}
