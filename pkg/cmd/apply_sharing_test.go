package cmd_test

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestApply_SharedWith_SharesAndUnsharesAsTheVerbsDo(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	_, err := w.c.Core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	p := w.file(t, "db.yaml", instance("5"))
	_, errOut, code := w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	calls := w.calls.Load()

	// A namespace that does not exist: refused as share refuses it, nothing changed.
	w.file(t, "db.yaml", instance("5")+"  sharedWith: [nosuch]\n")
	w.c.Core.ClearActions()
	_, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(errOut, `namespace "nosuch" does not exist`), errOut)
	assert.Equal(t, w.recordWrites(), 0)

	w.file(t, "db.yaml", instance("5")+"  sharedWith: [team-b]\n")
	out, errOut, code := w.run(t, "", "diff", "-f", p)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(out, "+  sharedWith:\n+  - team-b\n"), out)
	out, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/db configured\n")
	inst, err := w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
	assert.NilError(t, err)
	assert.DeepEqual(t, inst.Spec.SharedWith, []string{"team-b"})
	assert.Equal(t, w.calls.Load(), calls, "a broker was called")

	w.c.Core.ClearActions()
	out, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/db unchanged\n")
	assert.Equal(t, w.recordWrites(), 0)

	// Left out again: the grant, which no binding uses, is withdrawn.
	w.file(t, "db.yaml", instance("5"))
	out, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/db configured\n")
	inst, err = w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
	assert.NilError(t, err)
	assert.Equal(t, len(inst.Spec.SharedWith), 0)

	// Shared again, then left out while team-b holds a binding of it: refused, unshare named.
	w.file(t, "db.yaml", instance("5")+"  sharedWith: [team-b]\n")
	_, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	_, err = w.c.Store().Bindings().Create(ctx, &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "team-b"},
		Spec: v1alpha1.ServiceBindingSpec{InstanceName: "db", InstanceNamespace: storetest.UserNamespace, SecretName: "theirs", ExternalID: "theirs-id"}})
	assert.NilError(t, err)
	w.file(t, "db.yaml", instance("5"))
	w.c.Core.ClearActions()
	_, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(errOut, `holds bindings of it (theirs)`), errOut)
	assert.Assert(t, is.Contains(errOut, `kubectl catalog unshare db --from-namespace team-b`), errOut)
	assert.Equal(t, w.recordWrites(), 0)
	inst, err = w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
	assert.NilError(t, err)
	assert.DeepEqual(t, inst.Spec.SharedWith, []string{"team-b"})
}

func TestApply_NewInstanceSharedWith_IsSharedOnceProvisioned(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	_, err := w.c.Core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	w.file(t, "own.yaml", instance("5")+"  sharedWith: [dev]\n")
	_, errOut, code := w.run(t, "", "apply", "-f", w.dir)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(errOut, "its own namespace"), errOut)
	assert.Equal(t, w.calls.Load(), int32(0))

	p := w.file(t, "own.yaml", instance("5")+"  sharedWith: [team-b]\n")
	_, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	inst, err := w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
	assert.NilError(t, err)
	assert.DeepEqual(t, inst.Spec.SharedWith, []string{"team-b"})
}
