package reconcile

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// A tenant who resets the backoff of a failing record after every run does not make the
// next run of the same reconcile (--serve) call the broker at once.
func TestRun_AStatusWithoutBackoff_DoesNotShortenReconcilesOwn(t *testing.T) {
	f := newFixture(t)
	f.broker.OnProvision(func(context.Context, *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		return nil, &osb.HTTPStatusError{Method: http.MethodPut, StatusCode: http.StatusUnauthorized}
	})
	f.instance("db")
	resetBackoff := func() {
		_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
			// Due now, as if it had never failed.
			past := metav1.NewTime(f.now.Add(-time.Hour))
			i.Status.Retry.Attempts, i.Status.Retry.NextRetryAt = 0, &past
			return nil
		})
		assert.NilError(t, err)
	}

	sum := f.run(Options{Workers: 1, RetryHorizon: time.Millisecond})
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), 1, "%+v", sum.Items)
	resetBackoff()

	sum = f.run(Options{Workers: 1, RetryHorizon: time.Millisecond})

	assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), 1, "the broker is not called again before the floor")
	it := f.item(sum, "db")
	assert.Equal(t, it.Outcome, Waiting, it.Detail)
	assert.Assert(t, strings.Contains(it.Detail, "no sooner than"), it.Detail)

	f.now = f.now.Add(time.Minute)
	resetBackoff()
	f.run(Options{Workers: 1, RetryHorizon: time.Millisecond})
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), 2, "once the floor has passed, the record is tried again")
}
