package doctor

import (
	"context"
	"errors"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// forbidAllNamespaces is a metadata client that may not list across namespaces.
type forbidAllNamespaces struct{ metadata.Interface }

func (m forbidAllNamespaces) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return forbidAllNamespacesGetter{m.Interface.Resource(gvr)}
}

type forbidAllNamespacesGetter struct{ metadata.Getter }

func (g forbidAllNamespacesGetter) Namespace(ns string) metadata.ResourceInterface {
	if ns == "" {
		return forbiddenList{g.Getter.Namespace(ns)}
	}
	return g.Getter.Namespace(ns)
}

type forbiddenList struct{ metadata.ResourceInterface }

func (forbiddenList) List(context.Context, metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	return nil, apierrors.NewForbidden(corev1.Resource("configmaps"), "", errors.New("no"))
}

// A namespace-scoped broker in a namespace being deleted is kept until its instances
// are deprovisioned: doctor says which instances it waits for.
func TestRecords_TerminatingNamespace_SaysTheBrokerWaitsForItsInstances(t *testing.T) {
	fx := newFixture(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaving"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}})
	ctx := context.Background()
	fx.addBroker(t, "leaving", "team", "http://127.0.0.1:1", nil)
	st := fx.st
	inst := instance("leaving", "db")
	inst.Spec.BrokerName, inst.Spec.Scope = "team", v1alpha1.ScopeNamespace
	_, err := st.Instances().Create(ctx, inst)
	assert.NilError(t, err)
	fx.cluster.SetClock(func() time.Time { return fx.now.Add(-20 * time.Minute) })
	assert.NilError(t, st.Brokers().Delete(ctx, "leaving", "team"))
	assert.NilError(t, st.Instances().Delete(ctx, "leaving", "db"))

	fs := Records(ctx, fx.config())

	f, ok := find(fs, "namespace leaving")
	assert.Assert(t, ok, "%+v", fs)
	assert.Equal(t, f.Severity, Warn)
	assert.Assert(t, is.Contains(f.Detail, `held by 2 catalog records`))
	assert.Assert(t, is.Contains(f.Detail, `broker "team" is kept until its instance db is deprovisioned`))
	f, ok = find(fs, "record leaving/broker/team")
	assert.Assert(t, ok, "%+v", fs)
	assert.Assert(t, is.Contains(f.Detail, "deleted 20m0s ago and still waiting for its instances: kept until its instance db is deprovisioned"))
}

// A namespace being deleted for a minute is reported as held by its records, with the
// brokers kept for their instances, before any record is stuck.
func TestRecords_TerminatingNamespace_NamesTheKeptBrokerAtOnce(t *testing.T) {
	fx := newFixture(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaving"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}})
	ctx := context.Background()
	fx.addBroker(t, "leaving", "team", "http://127.0.0.1:1", nil)
	inst := instance("leaving", "db")
	inst.Spec.BrokerName, inst.Spec.Scope = "team", v1alpha1.ScopeNamespace
	_, err := fx.st.Instances().Create(ctx, inst)
	assert.NilError(t, err)
	fx.cluster.SetClock(func() time.Time { return fx.now.Add(-time.Minute) })
	assert.NilError(t, fx.st.Brokers().Delete(ctx, "leaving", "team"))
	assert.NilError(t, fx.st.Instances().Delete(ctx, "leaving", "db"))

	fs := Records(ctx, fx.config())

	assert.DeepEqual(t, objects(fs), []string{"namespace leaving", "records"})
	assert.Assert(t, is.Contains(fs[0].Detail, `broker "team" is kept until its instance db is deprovisioned`))
	assert.Equal(t, fs[1].Detail, "none stuck in all namespaces (2 with pending work)")
}

func TestRecords_ListsTheCurrentNamespaceWhenNotAllowedAll(t *testing.T) {
	fx := newFixture(t)
	c := fx.config()
	c.Records = engine.NewReader(store.New(fx.cluster.Core, forbidAllNamespaces{fx.cluster.Metadata}))
	fs := Records(context.Background(), c)
	assert.DeepEqual(t, fs, []Finding{{Object: "records", Severity: OK, Detail: "none stuck in namespace dev (0 with pending work)"}})
}
