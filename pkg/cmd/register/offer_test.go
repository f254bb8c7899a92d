package register

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/setup"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

// offerOptions are register's options after a registration, on a fake cluster where
// the user may do everything and no trust policy is installed.
func offerOptions(p prompt.Prompter, yes bool) (*Options, *fake.Clientset, *bytes.Buffer) {
	core := fake.NewClientset()
	core.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authzv1.SelfSubjectAccessReview)
		r.Status.Allowed = true
		return true, r, nil
	})
	var out bytes.Buffer
	streams := cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &out)
	s := setup.NewOptions(streams, "cat", core)
	s.SkipEnforcementCheck = true
	return &Options{Streams: streams, Core: core, Setup: s, Prompter: p, Yes: yes}, core, &out
}

func policyInstalled(t *testing.T, core *fake.Clientset) bool {
	t.Helper()
	_, err := core.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(context.Background(), trust.PolicyName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	assert.NilError(t, err)
	return true
}

func TestOfferSetup_WithoutATerminalNamesInitAndChangesNothing(t *testing.T) {
	o, core, out := offerOptions(nil, false)
	o.offerSetup(context.Background())
	assert.Assert(t, strings.Contains(out.String(), `an administrator runs "kubectl catalog init" once`), out.String())
	assert.Equal(t, strings.Count(out.String(), "\n"), 1, "one line: %s", out.String())
	assert.Assert(t, !policyInstalled(t, core))
}

func TestOfferSetup_AtATerminalAsksOnceAndSetsTheCatalogUp(t *testing.T) {
	p := &prompt.Scripted{Answers: []string{"y"}}
	o, core, out := offerOptions(p, false)
	o.offerSetup(context.Background())
	assert.Equal(t, len(p.Asked), 1)
	assert.Assert(t, policyInstalled(t, core), out.String())
	assert.Assert(t, strings.Contains(out.String(), "configmap/catalog-cluster-id created"), out.String())

	// Set up: nothing more is offered.
	p = &prompt.Scripted{}
	o.Prompter = p
	out.Reset()
	o.offerSetup(context.Background())
	assert.Equal(t, len(p.Asked), 0)
}

func TestOfferSetup_DeclinedOrYes(t *testing.T) {
	o, core, out := offerOptions(&prompt.Scripted{Answers: []string{"n"}}, false)
	o.offerSetup(context.Background())
	assert.Assert(t, !policyInstalled(t, core))
	assert.Assert(t, strings.Contains(out.String(), "kubectl catalog init"), out.String())

	p := &prompt.Scripted{}
	o, core, _ = offerOptions(p, true)
	o.offerSetup(context.Background())
	assert.Equal(t, len(p.Asked), 0, "--yes accepts without asking")
	assert.Assert(t, policyInstalled(t, core))
}
