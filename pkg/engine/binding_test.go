package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

const (
	secretValue = "s3cr3t-value-never-in-records"
	bindingOSB  = "bind-osb-1"
)

// recordingProjector records projections instead of changing workloads.
type recordingProjector struct {
	projected map[string]bool
	err       error
}

func (p *recordingProjector) Project(_ context.Context, _, binding, secretName string, w v1alpha1.WorkloadProjection) error {
	if p.err != nil {
		return p.err
	}
	p.projected[binding+"/"+w.Kind+"/"+w.Name+"/"+secretName] = true
	return nil
}

func (p *recordingProjector) Unproject(_ context.Context, _, binding string, w v1alpha1.WorkloadProjection) error {
	for k := range p.projected {
		if strings.HasPrefix(k, binding+"/"+w.Kind+"/"+w.Name+"/") {
			delete(p.projected, k)
		}
	}
	return nil
}

// bindingFixture is a fixture with a ready instance "db" and a projector.
func bindingFixture(t *testing.T, edit func(*v1alpha1.ServiceClass)) (*fixture, *recordingProjector) {
	t.Helper()
	f := newFixture(t)
	p := &recordingProjector{projected: map[string]bool{}}
	f.engine.cfg.Projector = p
	if edit != nil {
		_, err := f.st.Classes().UpdateWithRetry(context.Background(), f.classNamespace(), v1alpha1.ClassRecordName(brokerName, classID),
			func(c *v1alpha1.ServiceClass) error { edit(c); return nil })
		assert.NilError(t, err)
	}
	f.provisioned("db", planSmall, "")
	f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{
		"host": "db.example", "port": 5432, "password": secretValue,
	}}, nil)
	return f, p
}

func (f *fixture) classNamespace() string { return f.get0Broker().Namespace }

func (f *fixture) get0Broker() *v1alpha1.Broker {
	bs, err := f.st.Brokers().List(context.Background(), "", store.Filter{})
	assert.NilError(f.t, err)
	assert.Assert(f.t, len(bs) == 1)
	return bs[0]
}

func (f *fixture) createBinding(name string, edit func(*BindingIntent)) *v1alpha1.ServiceBinding {
	f.t.Helper()
	in := BindingIntent{Namespace: ns, Name: name, Instance: "db", SecretName: name, ExternalID: bindingOSB}
	if edit != nil {
		edit(&in)
	}
	b, err := f.st.Bindings().Create(store.WithIntent(context.Background()), NewBinding(in))
	assert.NilError(f.t, err)
	return b
}

func (f *fixture) getBinding(name string) *v1alpha1.ServiceBinding {
	f.t.Helper()
	b, err := f.st.Bindings().Get(context.Background(), ns, name)
	assert.NilError(f.t, err)
	return b
}

func (f *fixture) stepBinding(name string) Result {
	f.t.Helper()
	res, err := f.engine.StepBinding(context.Background(), f.getBinding(name))
	assert.NilError(f.t, err)
	return res
}

func (f *fixture) driveBinding(name string) Result {
	f.t.Helper()
	for range 20 {
		b, err := f.st.Bindings().Get(context.Background(), ns, name)
		if store.IsNotFound(err) {
			return Result{State: StateDeleted}
		}
		assert.NilError(f.t, err)
		res, err := f.engine.StepBinding(context.Background(), b)
		assert.NilError(f.t, err)
		if res.Done() {
			return res
		}
		f.advance(max(res.RequeueAfter, time.Second))
	}
	f.t.Fatalf("binding %s did not settle", name)
	return Result{}
}

func (f *fixture) secretData(name string) map[string][]byte {
	f.t.Helper()
	s, err := f.st.GetSecret(context.Background(), ns, name)
	assert.NilError(f.t, err)
	return s.Data
}

func (f *fixture) assertNoSecretInRecords() {
	f.t.Helper()
	cms, err := f.cluster.Core.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	assert.NilError(f.t, err)
	for _, cm := range cms.Items {
		for k, v := range cm.Data {
			assert.Assert(f.t, !strings.Contains(v, secretValue), "credentials leaked into ConfigMap %s key %s", cm.Name, k)
		}
	}
}

func condition2(b *v1alpha1.ServiceBinding, typ string) metav1.Condition {
	for _, c := range b.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func TestNextBindingStep_FollowsStepBindingOrder(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	b := f.createBinding("db", nil)
	assert.Equal(t, f.engine.NextBindingStep(b).Action, NextBind)
	f.stepBinding("db")
	b = f.getBinding("db")
	b.Spec.Projections = []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "web"}}
	assert.Equal(t, f.engine.NextBindingStep(b).Action, NextProject)
	now := metav1.NewTime(f.now)
	b.DeletionTimestamp = &now
	assert.Equal(t, f.engine.NextBindingStep(b).Action, NextUnbind)
	b.Status.Bound = nil
	assert.Equal(t, f.engine.NextBindingStep(b).Action, NextUnbind, "the id stays listed until the broker confirms it gone")
	b.Status.ExternalIDs = nil
	assert.Equal(t, f.engine.NextBindingStep(b).Action, NextRelease)
}

// failingProjector projects as recordingProjector does, except into the workloads named
// in failOn, where it first changes the workload, then fails (as a write that timed out
// after the API server applied it).
type failingProjector struct {
	*recordingProjector
	failOn map[string]bool
}

func (p *failingProjector) Project(ctx context.Context, namespace, binding, secretName string, w v1alpha1.WorkloadProjection) error {
	if err := p.recordingProjector.Project(ctx, namespace, binding, secretName, w); err != nil {
		return err
	}
	if p.failOn[w.Name] {
		return fmt.Errorf("deployment %q: the API server did not answer", w.Name)
	}
	return nil
}
