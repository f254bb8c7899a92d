package cmd_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestDiff_ExitStatusSaysWhetherApplyWouldChangeAnything(t *testing.T) {
	w := newWorld(t)
	p := w.file(t, "db.yaml", instance("5"))
	out, errOut, code := w.run(t, "", "diff", "-f", p)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(out, "+++ manifest/serviceinstance/db"), out)
	assert.Assert(t, is.Contains(out, "+  plan: small"), out)
	_, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)

	w.c.Core.ClearActions()
	out, errOut, code = w.run(t, "", "diff", "-f", p)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "")

	w.file(t, "db.yaml", instance("8"))
	out, errOut, code = w.run(t, "", "diff", "-f", p)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(out, "-    storage: 5\n+    storage: 8\n"), out)
	assert.Equal(t, w.calls.Load(), int32(1)) // the provision only
	assert.Equal(t, w.recordWrites(), 0)

	w.file(t, "db.yaml", instance("5")+"  colour: blue\n")
	_, errOut, code = w.run(t, "", "diff", "-f", p)
	assert.Equal(t, code, 2, errOut)
	assert.Assert(t, is.Contains(errOut, "db.yaml, document 1"), errOut)
}

func TestDelete_UnbindsThenDeprovisionsWhatTheFilesName(t *testing.T) {
	w := newWorld(t)
	w.file(t, "db.yaml", instance("5"))
	w.file(t, "binding.yaml", dbBinding)
	_, errOut, code := w.run(t, "", "apply", "-f", w.dir)
	assert.Equal(t, code, 0, errOut)

	_, errOut, code = w.run(t, "", "delete", "-f", w.dir)
	assert.Equal(t, code, cmdutil.ExitUsage, "not a terminal: --yes is needed")
	assert.Assert(t, is.Contains(errOut, "--yes"), errOut)
	assert.Equal(t, w.calls.Load(), int32(2))

	_, errOut, code = w.run(t, "", "delete", "-f", w.dir, "--yes")
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, w.calls.Load(), int32(4)) // unbind, deprovision
	ctx := context.Background()
	_, err := w.c.Store().Bindings().Get(ctx, storetest.UserNamespace, "db-creds")
	assert.Assert(t, err != nil)
	_, err = w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
	assert.Assert(t, err != nil)

	_, errOut, code = w.run(t, "", "delete", "-f", w.dir, "--yes")
	assert.Equal(t, code, 0, errOut)
	assert.Assert(t, is.Contains(errOut, `instance "db" not found`), errOut)
}

func TestApplyPrune_DeprovisionsWhatTheFilesNoLongerName(t *testing.T) {
	w := newWorld(t)
	w.file(t, "db.yaml", instance("5"))
	w.file(t, "db2.yaml", strings.Replace(instance("5"), "name: db\n", "name: db2\n", 1))
	_, errOut, code := w.run(t, "", "apply", "-f", w.dir)
	assert.Equal(t, code, 0, errOut)
	assert.NilError(t, os.Remove(filepath.Join(w.dir, "db2.yaml")))

	_, errOut, code = w.run(t, "", "apply", "-f", w.dir, "--prune", "-l", "team=payments")
	assert.Equal(t, code, cmdutil.ExitUsage, errOut)
	assert.Assert(t, is.Contains(errOut, "--yes"), errOut)
	_, errOut, code = w.run(t, "", "apply", "-f", w.dir, "--prune")
	assert.Equal(t, code, cmdutil.ExitUsage, errOut)
	assert.Equal(t, w.calls.Load(), int32(2))

	out, errOut, code := w.run(t, "", "apply", "-f", w.dir, "--prune", "-l", "team=payments", "--yes")
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/db unchanged\nserviceinstance.catalog.kubectl-catalog.io/db2 pruned\n")
	assert.Equal(t, w.calls.Load(), int32(3)) // the deprovision
	_, err := w.c.Store().Instances().Get(context.Background(), storetest.UserNamespace, "db2")
	assert.Assert(t, err != nil)
}

// brokerCatalog is the catalog every broker of the world's server offers: class "mysql"
// with plan "tiny".
const brokerCatalog = `{"services":[{"id":"mysql-id","name":"mysql","description":"MySQL","bindable":true,
"plans":[{"id":"tiny-id","name":"tiny","description":"tiny","free":true}]}]}`

// otherBroker is a cluster broker "other" at URL, with basic auth from Secret other-auth.
const otherBroker = `apiVersion: catalog.kubectl-catalog.io/v1alpha1
kind: Broker
metadata:
  name: other
spec:
  url: URL
  scope: Cluster
  auth:
    type: Basic
    secretRef:
      name: other-auth
`

const mysqlInstance = `apiVersion: catalog.kubectl-catalog.io/v1alpha1
kind: ServiceInstance
metadata:
  name: my
spec:
  classExternalName: mysql
  brokerName: other
  planExternalName: tiny
`
