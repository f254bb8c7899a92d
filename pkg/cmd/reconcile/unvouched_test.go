package reconcile

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/enginetest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// unvouchedOptions are reconcile's options at a terminal answering answers, on a cluster
// without the trust policy holding an instance, in namespace dev, whose parameters come
// from a Secret: no one vouches for its author.
func unvouchedOptions(t *testing.T, answers ...string) (*Options, *prompt.Scripted, *bytes.Buffer) {
	t.Helper()
	c := storetest.NewCluster()
	st := c.Store()
	ctx := context.Background()
	_, err := c.Core.CoreV1().Secrets(storetest.UserNamespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: storetest.UserNamespace, Name: "root"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = st.Instances().Create(ctx, &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: storetest.UserNamespace, Name: "db"},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: storetest.BrokerName, ClassExternalName: "db",
			ClassID: "c", PlanExternalName: "small", PlanID: "p", ExternalID: "osb-db",
			ParametersFrom: []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "root"}}}},
	})
	assert.NilError(t, err)
	var errOut bytes.Buffer
	p := &prompt.Scripted{Answers: answers}
	return &Options{
		Streams:    cmdutil.NewTestIOStreams(strings.NewReader(""), &bytes.Buffer{}, &errOut),
		Prompter:   p,
		Reconciler: &reconcile.Reconciler{Store: st, Engine: enginetest.New(st, fake.New())},
	}, p, &errOut
}

func TestReconcile_AtATerminal_ListsTheRecordsNoOneVouchesForAndAsksOnce(t *testing.T) {
	o, p, errOut := unvouchedOptions(t, "y")
	us, err := o.askToLend(context.Background(), reconcile.Options{Namespace: storetest.UserNamespace})
	assert.NilError(t, err)
	assert.Equal(t, len(us), 1)
	assert.Equal(t, us[0].Name, "db")
	assert.Check(t, is.Contains(errOut.String(), "  serviceinstance dev/db\n      Secret \"root\" (parameters) goes to cluster broker \""+storetest.BrokerName+"\"\n"))
	assert.DeepEqual(t, p.Asked, []string{"Act on this record with your own rights, trusting everyone who may write ConfigMaps in namespace dev?"})
}

func TestReconcile_AtATerminal_NoOrNoAnswerLendsNothing(t *testing.T) {
	for _, answers := range [][]string{{"n"}, nil} {
		o, p, errOut := unvouchedOptions(t, answers...)
		us, err := o.askToLend(context.Background(), reconcile.Options{Namespace: storetest.UserNamespace})
		assert.NilError(t, err)
		assert.Equal(t, len(us), 0)
		assert.Equal(t, len(p.Asked), 1)
		assert.Check(t, is.Contains(errOut.String(), "Your rights are not lent"))
	}
}

func TestReconcile_NeverAsks_WithoutATerminalTheFlagOrForADryRun(t *testing.T) {
	for name, edit := range map[string]func(*Options){
		"no terminal":               func(o *Options) { o.Prompter = nil },
		"--trust-namespace-writers": func(o *Options) { o.TrustUnverifiedAuthors = true },
		"--dry-run":                 func(o *Options) { o.DryRun = cmdutil.DryRunClient },
		"--serve":                   func(o *Options) { o.Serve.Enabled = true },
	} {
		t.Run(name, func(t *testing.T) {
			o, p, errOut := unvouchedOptions(t)
			edit(o)
			us, err := o.askToLend(context.Background(), reconcile.Options{Namespace: storetest.UserNamespace})
			assert.NilError(t, err)
			assert.Equal(t, len(us), 0)
			assert.Equal(t, len(p.Asked), 0)
			assert.Equal(t, errOut.String(), "")
		})
	}
}
