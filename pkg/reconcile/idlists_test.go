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
			n := 2 * IDChecksPerNamespace
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
