package trust

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// The store's stamp and the engine's checks ask the same Reader, at once: the policy,
// its binding and the token are read once, the three together.
func TestReader_ReadsTheStateOnceForEveryAsker(t *testing.T) {
	c := fake.NewClientset(Policy(), Binding(), TokenConfigMap(ns, "tok"))
	var gets atomic.Int32
	release := make(chan struct{})
	var arrived sync.WaitGroup
	arrived.Add(3)
	c.PrependReactor("get", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		gets.Add(1)
		arrived.Done()
		// Held until all three are under way: they go out together. The fake holds its
		// lock while its reactors run.
		c.Unlock()
		<-release
		c.Lock()
		return false, nil, nil
	})
	r := NewReader(c, ns)
	ctx := context.Background()
	var wg sync.WaitGroup
	states := make([]State, 4)
	tokens := make([]string, 4)
	for i := range 4 {
		wg.Add(2)
		go func() { defer wg.Done(); states[i], _ = r.State(ctx) }()
		go func() { defer wg.Done(); tokens[i], _ = r.Token(ctx) }()
	}
	arrived.Wait()
	close(release)
	wg.Wait()
	assert.Equal(t, gets.Load(), int32(3))
	for i := range 4 {
		assert.Equal(t, states[i].Token, "tok")
		assert.Equal(t, tokens[i], "tok")
	}
	// Kept: asked again, nothing is read.
	st, err := r.State(ctx)
	assert.NilError(t, err)
	assert.Equal(t, st.Token, "tok")
	assert.Equal(t, gets.Load(), int32(3))
}

// The stamp takes the token as stored even where the policy is not in force; the state
// says why it is not.
func TestReader_TokenWithoutThePolicy(t *testing.T) {
	r := NewReader(fake.NewClientset(TokenConfigMap(ns, "tok")), ns)
	tok, err := r.Token(context.Background())
	assert.NilError(t, err)
	assert.Equal(t, tok, "tok")
	st, err := r.State(context.Background())
	assert.NilError(t, err)
	assert.Assert(t, !st.InForce())
	assert.ErrorContains(t, errors.New(st.Reason), "ValidatingAdmissionPolicy kubectl-catalog-record-author is not installed")
}

// A reading that failed is not kept: the next ask reads again, and gets the answer.
func TestReader_FailureIsNotKept(t *testing.T) {
	c := fake.NewClientset(Policy(), Binding(), TokenConfigMap(ns, "tok"))
	var fail atomic.Bool
	fail.Store(true)
	c.PrependReactor("get", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		if fail.Load() {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	r := NewReader(c, ns)
	_, err := r.State(context.Background())
	assert.ErrorContains(t, err, "cannot read the token ConfigMap catalog-system/catalog-trust: connection refused")
	_, err = r.Token(context.Background())
	assert.ErrorContains(t, err, "cannot read the catalog's trust token")
	fail.Store(false)
	st, err := r.State(context.Background())
	assert.NilError(t, err)
	assert.Equal(t, st.Token, "tok")
}
