package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

const (
	ns          = storetest.UserNamespace
	brokerName  = "acme"
	classID     = "svc-1"
	planSmall   = "plan-small"
	planLarge   = "plan-large"
	planFixed   = "plan-fixed"
	instanceOSB = "inst-osb-1"
)

// fixture is a fake cluster with one broker and class, a fake broker, a settable clock
// and an engine over them.
type fixture struct {
	t       *testing.T
	cluster *storetest.Cluster
	st      *store.Store
	broker  *fake.Client
	now     time.Time
	engine  *Engine
	hook    func(HookPoint, *v1alpha1.Operation)
}

var testUser = &osb.OriginatingIdentity{Username: "alice", UID: "u-1", Groups: []string{"dev"}}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, cluster: storetest.NewCluster(), broker: fake.New(), now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	f.cluster.SetClock(func() time.Time { return f.now })
	f.st = f.cluster.Store(store.WithClock(func() time.Time { return f.now }))
	f.engine = New(Config{
		Store: f.st, Brokers: fake.Brokers{Client: f.broker},
		Platform:         StaticPlatform{Cluster: "cluster-1", User: testUser},
		CatalogNamespace: storetest.CatalogNamespace, Holder: "test",
		Now:    func() time.Time { return f.now },
		Jitter: func() float64 { return 0.5 }, // no jitter: delays are exact
		Hook: func(_ context.Context, p HookPoint, op *v1alpha1.Operation) {
			if f.hook != nil {
				f.hook(p, op)
			}
		},
	})
	ctx := context.Background()
	_, err := f.st.Brokers().Create(ctx, &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: storetest.CatalogNamespace, Name: brokerName},
		Spec:       v1alpha1.BrokerSpec{URL: "https://broker.example", Scope: v1alpha1.ScopeCluster},
	})
	assert.NilError(t, err)
	no := false
	_, err = f.st.Classes().Create(ctx, &v1alpha1.ServiceClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: storetest.CatalogNamespace, Name: v1alpha1.ClassRecordName(brokerName, classID)},
		Spec: v1alpha1.ServiceClassSpec{
			BrokerName: brokerName, Scope: v1alpha1.ScopeCluster, ID: classID, ExternalName: "db", Bindable: true, PlanUpdateable: true,
			Plans: []v1alpha1.ServicePlan{
				{ID: planSmall, ExternalName: "small", Free: true, MaximumPollingDuration: &metav1.Duration{Duration: 10 * time.Minute},
					MaintenanceInfo: &v1alpha1.MaintenanceInfo{Version: "1.0.0"}},
				{ID: planLarge, ExternalName: "large"},
				{ID: planFixed, ExternalName: "fixed", PlanUpdateable: &no},
			},
		},
	})
	assert.NilError(t, err)
	return f
}

// create stores a new instance of plan with inline parameters.
func (f *fixture) create(name, plan, params string) *v1alpha1.ServiceInstance {
	f.t.Helper()
	id := instanceOSB
	if name != "db" {
		// OSB ids are unique: the engine refuses one an older record uses.
		id = name + "-" + instanceOSB
	}
	inst := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{
			Scope: v1alpha1.ScopeCluster, BrokerName: brokerName, ClassExternalName: "db", ClassID: classID,
			PlanExternalName: plan, PlanID: plan, ExternalID: id,
		},
	}
	if params != "" {
		inst.Spec.Parameters = &runtime.RawExtension{Raw: []byte(params)}
	}
	stored, err := f.st.Instances().Create(store.WithIntent(context.Background()), inst)
	assert.NilError(f.t, err)
	return stored
}

func (f *fixture) get(name string) *v1alpha1.ServiceInstance {
	f.t.Helper()
	inst, err := f.st.Instances().Get(context.Background(), ns, name)
	assert.NilError(f.t, err)
	return inst
}

// step reads the instance and steps it once.
func (f *fixture) step(name string) Result {
	f.t.Helper()
	res, err := f.engine.StepInstance(context.Background(), f.get(name))
	assert.NilError(f.t, err)
	return res
}

// provisioned drives a fresh instance to Ready with a sync provision.
func (f *fixture) provisioned(name, plan, params string) *v1alpha1.ServiceInstance {
	f.t.Helper()
	f.create(name, plan, params)
	res := f.step(name)
	assert.Equal(f.t, res.State, StateSettled, res.Message)
	f.broker.ResetCalls()
	return f.get(name)
}

func (f *fixture) advance(d time.Duration) { f.now = f.now.Add(d) }

func condition(inst *v1alpha1.ServiceInstance, typ string) metav1.Condition {
	c := meta.FindStatusCondition(inst.Status.Conditions, typ)
	if c == nil {
		return metav1.Condition{}
	}
	return *c
}

func provisionReturns(f *fixture, status int, err error) {
	f.broker.OnProvision(func(context.Context, *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		if err != nil {
			return nil, err
		}
		return &osb.ProvisionResponse{StatusCode: status, Async: status == 202, Operation: "op-1"}, nil
	})
}

func secret(name string, data map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data, Data: toBytes(data)}
}

func toBytes(m map[string]string) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out
}
