package brokerclient_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

func secret(ns, name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func brokerRecord(url string, auth *v1alpha1.BrokerAuth) *v1alpha1.Broker {
	return &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "b1"},
		Spec:       v1alpha1.BrokerSpec{URL: url, Scope: v1alpha1.ScopeNamespace, Auth: auth},
	}
}

func TestClientFor_ReadsCredentialsFromSecret(t *testing.T) {
	ctx := context.Background()
	tb := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p", BearerToken: "tok", TLS: true})
	core := k8sfake.NewClientset(
		secret("team", "basic", map[string]string{"username": "u", "password": "p"}),
		secret("team", "bearer", map[string]string{"token": "tok\n"}),
		secret("team", "wrong", map[string]string{"username": "u", "password": "nope"}),
	)
	f := brokerclient.New(core, brokerclient.WithUserAgent("test"),
		brokerclient.WithOriginatingIdentity(&osb.OriginatingIdentity{Username: "alice"}))

	for _, tc := range []struct {
		name    string
		auth    *v1alpha1.BrokerAuth
		wantErr string
	}{
		{name: "basic", auth: &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "basic"}}},
		{name: "bearer", auth: &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBearer, SecretRef: v1alpha1.SecretReference{Name: "bearer"}}},
		{name: "wrong password", auth: &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "wrong"}}, wantErr: "401"},
		{name: "no auth", wantErr: "401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := brokerRecord(tb.URL(), tc.auth)
			b.Spec.CABundle = string(tb.CACertPEM())
			c, err := f.ClientFor(ctx, b)
			assert.NilError(t, err)
			_, err = c.GetCatalog(ctx, nil)
			if tc.wantErr == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestClientFor_UntrustedCertificateFailsUnlessInsecure(t *testing.T) {
	ctx := context.Background()
	tb := broker.NewTestBroker(t, broker.Options{TLS: true})
	f := brokerclient.New(k8sfake.NewClientset())
	b := brokerRecord(tb.URL(), nil)
	c, err := f.ClientFor(ctx, b)
	assert.NilError(t, err)
	_, err = c.GetCatalog(ctx, nil)
	assert.Assert(t, err != nil)

	b.Spec.InsecureSkipTLSVerify = true
	c, err = f.ClientFor(ctx, b)
	assert.NilError(t, err)
	_, err = c.GetCatalog(ctx, nil)
	assert.NilError(t, err)
}

func TestClientFor_SecretProblemsNameSecretAndKey(t *testing.T) {
	core := k8sfake.NewClientset(
		secret("team", "nouser", map[string]string{"password": "p"}),
		secret("team", "notoken", map[string]string{"username": "u"}),
		secret("other", "elsewhere", map[string]string{"token": "t"}),
	)
	f := brokerclient.New(core)
	for _, tc := range []struct {
		name    string
		auth    v1alpha1.BrokerAuth
		wantErr []string
	}{
		{name: "missing secret", auth: v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "absent"}},
			wantErr: []string{`broker "b1"`, `secret "absent" in namespace "team" not found`}},
		{name: "missing username", auth: v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "nouser"}},
			wantErr: []string{`secret "nouser"`, `no "username" key`}},
		{name: "missing token", auth: v1alpha1.BrokerAuth{Type: v1alpha1.AuthBearer, SecretRef: v1alpha1.SecretReference{Name: "notoken"}},
			wantErr: []string{`secret "notoken"`, `no "token" key`}},
		{name: "unknown type", auth: v1alpha1.BrokerAuth{Type: "Digest", SecretRef: v1alpha1.SecretReference{Name: "notoken"}},
			wantErr: []string{`unknown authentication type "Digest"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.ClientFor(context.Background(), brokerRecord("http://127.0.0.1:1", &tc.auth))
			assert.Assert(t, err != nil)
			for _, w := range tc.wantErr {
				assert.Assert(t, strings.Contains(err.Error(), w), "%q does not contain %q", err, w)
			}
		})
	}

	// A broker record is a ConfigMap anyone allowed to write ConfigMaps in its namespace
	// can forge: its credentials may come from its own namespace only.
	b := brokerRecord("http://127.0.0.1:1", &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBearer, SecretRef: v1alpha1.SecretReference{Name: "elsewhere", Namespace: "other"}})
	_, err := f.ClientFor(context.Background(), b)
	assert.ErrorContains(t, err, `a broker's credentials must be in its own namespace "team"`)
}

func TestClientFor_RefusesURLWithCredentials(t *testing.T) {
	_, err := brokerclient.New(nil).ClientFor(context.Background(), brokerRecord("http://u:p@example.com", nil))
	assert.ErrorContains(t, err, `broker "b1"`)
}

// The Secret of a namespace-scoped broker carries store.BrokerSecretFinalizer: deleting
// the namespace leaves it for the broker's instances, while a Secret deleted on purpose
// is let go and the broker fails visibly.
func TestClientFor_SecretBeingDeleted_KeptOnlyForANamespaceBeingDeleted(t *testing.T) {
	auth := &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "auth"}}
	deleting := func() *corev1.Secret {
		s := secret("team", "auth", map[string]string{"username": "u", "password": "p"})
		s.DeletionTimestamp, s.Finalizers = &metav1.Time{Time: time.Now()}, []string{store.BrokerSecretFinalizer}
		return s
	}
	namespace := func(phase corev1.NamespacePhase) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Status: corev1.NamespaceStatus{Phase: phase}}
	}
	for _, tc := range []struct {
		name           string
		phase          corev1.NamespacePhase
		brokerDeleting bool
		wantErr        string
	}{
		{name: "namespace being deleted", phase: corev1.NamespaceTerminating},
		{name: "broker being deleted", phase: corev1.NamespaceActive, brokerDeleting: true},
		{name: "deleted on purpose", phase: corev1.NamespaceActive, wantErr: `secret "auth" in namespace "team" is being deleted`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			core := k8sfake.NewClientset(deleting(), namespace(tc.phase))
			b := brokerRecord("http://127.0.0.1:1", auth)
			if tc.brokerDeleting {
				b.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			}
			_, err := brokerclient.New(core).ClientFor(ctx, b)
			s, gerr := core.CoreV1().Secrets("team").Get(ctx, "auth", metav1.GetOptions{})
			assert.NilError(t, gerr)
			if tc.wantErr == "" {
				assert.NilError(t, err)
				assert.DeepEqual(t, s.Finalizers, []string{store.BrokerSecretFinalizer})
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
			assert.Check(t, brokerclient.IsSecretError(err))
			assert.Check(t, len(s.Finalizers) == 0, "the finalizer is removed, so the Secret goes: %v", s.Finalizers)
		})
	}
}
