package doctor

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// tarpitProber is a broker that answers no catalog: each probe waits until its time
// is up, unless every one of want probes is under way at once (they were made in
// parallel), which it counts.
type tarpitProber struct {
	want    int
	started atomic.Int32
	all     chan struct{}
}

func (p *tarpitProber) ProbeBroker(ctx context.Context, b *v1alpha1.Broker) engine.BrokerProbe {
	if int(p.started.Add(1)) == p.want {
		close(p.all)
	}
	select {
	case <-p.all:
		return engine.BrokerProbe{Services: 1}
	case <-ctx.Done():
		return engine.BrokerProbe{Err: ctx.Err()}
	}
}

func TestBrokers_TarpitsAreCheckedAtOnce_WithinTheBudget(t *testing.T) {
	fx := newFixture(t)
	const tarpits = 6
	for i := range tarpits {
		_, err := fx.st.Brokers().Create(context.Background(), &v1alpha1.Broker{
			ObjectMeta: metav1.ObjectMeta{Namespace: userNS, Name: "tarpit-" + string(rune('a'+i))},
			Spec:       v1alpha1.BrokerSpec{URL: "https://tarpit.example", Scope: v1alpha1.ScopeNamespace},
		})
		assert.NilError(t, err)
	}
	c := fx.config()
	p := &tarpitProber{want: tarpits, all: make(chan struct{})}
	c.Brokers = p

	fs := Brokers(context.Background(), c)

	assert.Equal(t, len(fs), tarpits)
	for _, f := range fs {
		assert.Equal(t, f.Severity, OK, "%+v: the brokers were checked one after another", f)
	}
}

func TestBrokers_NotCheckedWithinTheBudget_SaysSo(t *testing.T) {
	fx := newFixture(t)
	for i := range brokerChecksAtOnce + 1 {
		_, err := fx.st.Brokers().Create(context.Background(), &v1alpha1.Broker{
			ObjectMeta: metav1.ObjectMeta{Namespace: userNS, Name: "tarpit-" + string(rune('a'+i))},
			Spec:       v1alpha1.BrokerSpec{URL: "https://tarpit.example", Scope: v1alpha1.ScopeNamespace},
		})
		assert.NilError(t, err)
	}
	c := fx.config()
	c.BrokerTimeout = time.Millisecond
	c.Brokers = &tarpitProber{want: -1, all: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the budget is gone before any check starts

	fs := Brokers(ctx, c)

	for _, f := range fs {
		assert.Equal(t, f.Severity, Warn, "%+v", f)
		assert.Assert(t, is.Contains(f.Detail, "ran out of time"))
		assert.Assert(t, is.Contains(f.Fix, "kubectl catalog sync broker tarpit-"))
	}
}

// refusingProber refuses every broker, noting which it was asked about.
type refusingProber struct {
	err     error
	checked []string
}

func (p *refusingProber) ProbeBroker(_ context.Context, b *v1alpha1.Broker) engine.BrokerProbe {
	p.checked = append(p.checked, b.Namespace+"/"+b.Name)
	return engine.BrokerProbe{NotCalled: p.err}
}

// A broker record the engine refuses (written by someone who may not read the Secret it
// names, or pointing out of its namespace) is reported as not called, with what its owner
// does about it.
func TestBroker_TheEngineRefuses(t *testing.T) {
	b := &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: userNS, Name: "forged"},
		Spec: v1alpha1.BrokerSpec{URL: "https://evil.example", Scope: v1alpha1.ScopeNamespace}}
	for _, tc := range []struct {
		name     string
		err      error
		severity Severity
		detail   string
		fix      string
	}{
		{name: "not authorized", err: &engine.RefusedError{Reason: engine.ReasonRefusedNotAuthorized,
			Message: `broker "forged": refused to get Secret "hidden": the record's author "alice" may not`},
			severity: Fail, detail: `refused: RefusedNotAuthorized: broker "forged": refused to get Secret "hidden": the record's author "alice" may not`,
			fix: "nothing is sent to this broker: its owner fixes what it names or registers it again with kubectl catalog, or it is deleted (kubectl catalog describe broker forged -n dev; docs/security.md)"},
		{name: "author unverified", err: &engine.RefusedError{Reason: engine.ReasonRefusedAuthorUnverified, Message: "no author\n  known"},
			severity: Warn, detail: "refused: RefusedAuthorUnverified: no author known",
			fix: `not called, since its author cannot be verified: install the trust policy ("kubectl catalog init"), or check it yourself with "kubectl catalog sync broker forged -n dev"`},
		{name: "cannot check", err: errors.New("the API server is gone"), severity: Fail, detail: "not called: the API server is gone",
			fix: "nothing is sent to this broker: its owner fixes what it names or registers it again with kubectl catalog, or it is deleted (kubectl catalog describe broker forged -n dev; docs/security.md)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &refusingProber{err: tc.err}
			c := &Config{CatalogNamespace: catalogNS, BrokerTimeout: time.Second, Brokers: p}
			f := Broker(context.Background(), c, b)
			assert.DeepEqual(t, f, Finding{Object: "broker dev/forged", Severity: tc.severity, Detail: tc.detail, Fix: tc.fix})
			assert.DeepEqual(t, p.checked, []string{"dev/forged"})
		})
	}
}

// doctor never calls a broker the engine would not call in its author's name: a broker
// record someone else wrote, naming credentials, is not called, whoever runs doctor.
func TestBrokers_ARecordTheEngineRefusesIsNotCalled(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = w.Write([]byte(`{"services":[]}`))
	}))
	t.Cleanup(srv.Close)
	fx := newFixture(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: userNS, Name: "hidden"}, Data: map[string][]byte{"token": []byte("s3cret")}})
	_, err := fx.st.Brokers().Create(context.Background(), &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: userNS, Name: "forged"},
		Spec: v1alpha1.BrokerSpec{URL: srv.URL, Scope: v1alpha1.ScopeNamespace,
			Auth: &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBearer, SecretRef: v1alpha1.SecretReference{Name: "hidden"}}},
	})
	assert.NilError(t, err)
	fs := Brokers(context.Background(), fx.config())
	assert.Equal(t, len(fs), 1, "%+v", fs)
	assert.Equal(t, fs[0].Object, "broker dev/forged")
	assert.Equal(t, fs[0].Severity, Warn, "%+v", fs[0])
	assert.Assert(t, is.Contains(fs[0].Detail, "refused: RefusedAuthorUnverified: "))
	assert.Assert(t, is.Contains(fs[0].Fix, "not called, since its author cannot be verified"))
	assert.Equal(t, calls.Load(), int32(0), "the broker was called")
}

// A broker ConfigMap that does not hold a readable record is a finding of its own; the
// other brokers of its namespace are checked all the same.
func TestBrokers_AnUnreadableRecordIsAFindingOfItsOwn(t *testing.T) {
	b := broker.NewTestBroker(t, broker.Options{})
	fx := newFixture(t)
	fx.addBroker(t, userNS, "good", b.URL(), nil)
	fx.addBroker(t, userNS, "bad", b.URL(), nil)
	ctx := context.Background()
	cms, err := fx.cluster.Core.CoreV1().ConfigMaps(userNS).List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	for _, cm := range cms.Items {
		if strings.HasSuffix(cm.Name, "bad") {
			for k := range cm.Data {
				cm.Data[k] = "{not json"
			}
			for k := range cm.BinaryData {
				cm.BinaryData[k] = []byte("{not json")
			}
			_, err := fx.cluster.Core.CoreV1().ConfigMaps(userNS).Update(ctx, &cm, metav1.UpdateOptions{})
			assert.NilError(t, err)
		}
	}

	fs := Brokers(ctx, fx.config())

	assert.DeepEqual(t, objects(fs), []string{"record dev/broker/bad", "broker dev/good"})
	assert.Equal(t, fs[0].Severity, Warn)
	assert.Assert(t, is.Contains(fs[0].Detail, "cannot read it: "))
	assert.Assert(t, is.Contains(fs[0].Detail, "does not hold a readable broker"))
	assert.Assert(t, is.Contains(fs[0].Fix, "fix or delete the ConfigMap"))
	assert.Equal(t, fs[1].Severity, OK, "%+v", fs[1])
}

func TestBrokers_ARecordOfANewerFormatIsAFindingOfItsOwn(t *testing.T) {
	b := broker.NewTestBroker(t, broker.Options{})
	fx := newFixture(t)
	fx.addBroker(t, userNS, "good", b.URL(), nil)
	_, err := fx.cluster.Core.CoreV1().ConfigMaps(userNS).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: userNS, Name: store.ConfigMapName(v1alpha1.KindBroker, "newer"),
			Labels: map[string]string{store.LabelKind: v1alpha1.KindBroker}, Annotations: map[string]string{store.AnnotationFormat: "99"}},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)

	fs := Brokers(context.Background(), fx.config())

	assert.DeepEqual(t, objects(fs), []string{"record dev/broker/newer", "broker dev/good"})
	assert.Assert(t, is.Contains(fs[0].Detail, "cannot read it: "))
	assert.Equal(t, fs[1].Severity, OK, "%+v", fs[1])
}

func TestBrokers_NoneRegistered(t *testing.T) {
	fs := Brokers(context.Background(), newFixture(t).config())
	assert.DeepEqual(t, fs, []Finding{{Object: "brokers", Severity: Warn, Detail: "no broker registered in namespace dev or catalog-system",
		Fix: "register one: kubectl catalog register NAME --url URL"}})
}
