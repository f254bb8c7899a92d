package store_test

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// WriteBindingSecretOver writes only over the Secret as its writer read it: any other
// write since (or a Secret made or deleted since) is a conflict, and nothing is written.
func TestWriteBindingSecretOver_WritesOnlyOverTheVersionRead(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup leaves the Secret as the writer reads it and returns the version read;
		// then (after the read) changes it as another writer would.
		setup func(ctx context.Context, t *testing.T, st *store.Store, b bindingRef) string
		then  func(ctx context.Context, t *testing.T, st *store.Store, b bindingRef)
		ok    bool
		want  string
	}{
		{name: "none read, none since", ok: true, want: "mine",
			setup: func(context.Context, *testing.T, *store.Store, bindingRef) string { return "" },
			then:  func(context.Context, *testing.T, *store.Store, bindingRef) {}},
		{name: "none read, another wrote one since", want: "other",
			setup: func(context.Context, *testing.T, *store.Store, bindingRef) string { return "" },
			then:  writeOther},
		{name: "one read, unchanged since", ok: true, want: "mine",
			setup: readAfter(writeOther),
			then:  func(context.Context, *testing.T, *store.Store, bindingRef) {}},
		{name: "one read, another wrote since", want: "newer",
			setup: readAfter(writeOther),
			then: func(ctx context.Context, t *testing.T, st *store.Store, b bindingRef) {
				_, err := st.WriteBindingSecret(ctx, b.b, map[string][]byte{"password": []byte("newer")})
				assert.NilError(t, err)
			}},
		{name: "one read, deleted since", want: "",
			setup: readAfter(writeOther),
			then: func(ctx context.Context, t *testing.T, st *store.Store, b bindingRef) {
				assert.NilError(t, b.c.Core.CoreV1().Secrets("dev").Delete(ctx, "db-credentials", metav1.DeleteOptions{}))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, st, _ := newCluster(t)
			b := bindingRef{b: mustCreateBinding(t, st), c: c}
			rv := tc.setup(ctx, t, st, b)
			tc.then(ctx, t, st, b)
			_, err := st.WriteBindingSecretOver(ctx, b.b, map[string][]byte{"password": []byte("mine")}, rv)
			if tc.ok {
				assert.NilError(t, err)
			} else {
				assert.Assert(t, store.IsConflict(err), "%v", err)
			}
			s, err := c.Core.CoreV1().Secrets("dev").Get(ctx, "db-credentials", metav1.GetOptions{})
			if tc.want == "" {
				assert.Assert(t, err != nil, "the Secret was made again: %v", s)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, string(s.Data["password"]), tc.want)
		})
	}
}

// A Secret of that name the binding does not own is never written, whatever was read.
func TestWriteBindingSecretOver_RefusesASecretItDoesNotOwn(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	b := mustCreateBinding(t, st)
	s, err := c.Core.CoreV1().Secrets("dev").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "db-credentials"},
		Data: map[string][]byte{"password": []byte("users")}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = st.WriteBindingSecretOver(ctx, b, map[string][]byte{"password": []byte("mine")}, s.ResourceVersion)
	assert.Assert(t, store.IsNotOwned(err), "%v", err)
	got, err := c.Core.CoreV1().Secrets("dev").Get(ctx, "db-credentials", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, string(got.Data["password"]), "users")
}

// bindingRef is the binding of a test and its cluster.
type bindingRef struct {
	b *v1alpha1.ServiceBinding
	c *storetest.Cluster
}

// writeOther is another writer's copy.
func writeOther(ctx context.Context, t *testing.T, st *store.Store, b bindingRef) {
	t.Helper()
	_, err := st.WriteBindingSecret(ctx, b.b, map[string][]byte{"password": []byte("other")})
	assert.NilError(t, err)
}

// readAfter runs write, then reads the Secret's version as the writer under test does.
func readAfter(write func(context.Context, *testing.T, *store.Store, bindingRef)) func(context.Context, *testing.T, *store.Store, bindingRef) string {
	return func(ctx context.Context, t *testing.T, st *store.Store, b bindingRef) string {
		write(ctx, t, st, b)
		s, err := st.GetSecret(ctx, "dev", "db-credentials")
		assert.NilError(t, err)
		return s.ResourceVersion
	}
}
