package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// squat creates, in namespace team-b, a ConfigMap with the instance kind label and the
// label of OSB id id, holding data (nothing when nil): what anyone who may write
// ConfigMaps can create before the record that uses the id.
func (f *fixture) squat(name, id string, data map[string]string) {
	f.t.Helper()
	_, err := f.cluster.Core.CoreV1().ConfigMaps("team-b").Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: store.ConfigMapName(v1alpha1.KindServiceInstance, name),
			Labels: map[string]string{store.LabelKind: v1alpha1.KindServiceInstance, store.IDLabel(id): "true"}},
		Data: data,
	}, metav1.CreateOptions{})
	assert.NilError(f.t, err)
}

func TestTrust_AConfigMapSquattingOnAnID_BlocksNoCallOfTheRecordThatUsesIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		data map[string]string
	}{
		{name: "empty"},
		{name: "not a record", data: map[string]string{store.DataKey: "{"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			// Older than db, and in the same second a record that does use the id
			// would be older too.
			f.squat("squat", instanceOSB, tc.data)
			f.advance(time.Second)
			f.provisioned("db", planSmall, "") // settled: the provision was sent

			assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
			res := f.step("db")
			assert.Equal(t, res.State, StateDeleted, res.Message)
			calls := f.broker.Calls()
			assert.Equal(t, len(calls), 1)
			assert.Equal(t, calls[0].Method, "Deprovision")
		})
	}
}

func TestTrust_AnOlderRealRecordThatUsesTheID_StillBlocksIt(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, "")
	f.advance(time.Second)
	// Same id, labelled: only db's label is backed by a record naming the id.
	f.squat("squat", instanceOSB, nil)
	_, err := f.st.Instances().Create(store.WithIntent(context.Background()), forgedInstance("copy", "team-b", instanceOSB, nil))
	assert.NilError(t, err)
	res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "copy"}})
	assertRefused(t, f, res, "team-b", "copy", ReasonRefusedIDInUse)
	copied, err := f.st.Instances().Get(context.Background(), "team-b", "copy")
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(condition(copied, v1alpha1.ConditionRefused).Message, `instance "db"`), "%+v", copied.Status.Conditions)
}
