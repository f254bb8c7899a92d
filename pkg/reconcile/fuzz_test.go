package reconcile

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// FuzzRun_AnyStatusFailsItsRecordOnly writes any status into one instance's ConfigMap, as
// anyone who may write it can, beside an honest instance: the run ends (within its
// --max-duration: a forged operation may be polled for ever) with an item for each, and
// the honest one never fails.
func FuzzRun_AnyStatusFailsItsRecordOnly(f *testing.F) {
	for _, seed := range []string{
		`{"inFlight":{"type":"Update","instanceID":"osb-forged"}}`,
		`{"inFlight":{"type":"Provision","instanceID":"osb-forged","async":true}}`,
		`{"inFlight":{"type":"Deprovision"},"provisioned":{}}`,
		`{"orphanMitigation":{},"retry":{"attempts":-1}}`,
		`{"provisioned":{"planID":""},"externalIDs":["osb-honest"]}`,
		`null`, `{`, `[]`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, status string) {
		fx := newFixture(t)
		fx.instance("honest")
		fx.instance("forged")
		ctx := context.Background()
		cms := fx.cluster.Core.CoreV1().ConfigMaps(ns)
		name := store.ConfigMapName(v1alpha1.KindServiceInstance, "forged")
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		assert.NilError(t, err)
		cm.Data[store.StatusDataKey] = status
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		assert.NilError(t, err)

		sum, err := fx.rec.Run(ctx, Options{Workers: 2, MaxDuration: 200 * time.Millisecond})
		assert.NilError(t, err)
		assert.Assert(t, fx.item(sum, "honest").Outcome != Failed, "%+v", sum.Items)
		fx.item(sum, "forged")
	})
}
