package broker

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

func TestPersistence_RestartedBrokerRemembersInstancesBindingsAndOperations(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "state.json")
	withFile := func(o *Options) { o.StateFile = file; o.AsyncDelay = 400 * time.Millisecond }

	first, c1 := startBroker(t, withFile)
	c1.provisionSync("sync", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
	var bind osb.BindResponse
	c1.do(http.MethodPut, bindingPath("sync", "b1"), bindBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, nil)).expect(t, http.StatusCreated).decode(t, &bind)
	var prov osb.ProvisionResponse
	c1.do(http.MethodPut, instancePath("async")+"?accepts_incomplete=true", provisionBody(DemoPostgresServiceID, DemoPostgresStandardPlanID, nil)).expect(t, http.StatusAccepted).decode(t, &prov)
	c1.provisionSync("deleted", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
	c1.do(http.MethodDelete, deletePath(instancePath("deleted"), DemoPostgresServiceID, DemoPostgresHobbyPlanID, false), nil).expect(t, http.StatusOK)
	assert.NilError(t, first.Close())

	entries, err := os.ReadDir(dir)
	assert.NilError(t, err)
	assert.Check(t, is.Len(entries, 1), "no temporary files are left behind")
	data, err := os.ReadFile(file)
	assert.NilError(t, err)
	assert.Check(t, json.Valid(data))

	second, c2 := startBroker(t, withFile)
	assert.Check(t, is.Len(second.Instances(), 2))
	t.Run("binding and its credentials survive", func(t *testing.T) {
		var got osb.GetBindingResponse
		c2.do(http.MethodGet, bindingPath("sync", "b1"), nil).expect(t, http.StatusOK).decode(t, &got)
		assert.Check(t, is.DeepEqual(got.Credentials, bind.Credentials))
	})
	t.Run("an operation started before the restart completes after it", func(t *testing.T) {
		_, lo := c2.pollUntilDone(lastOpPath(instancePath("async"), "", "", prov.Operation))
		assert.Check(t, is.Equal(lo.State, osb.StateSucceeded))
	})
	t.Run("a deleted instance still answers 410", func(t *testing.T) {
		c2.do(http.MethodGet, lastOpPath(instancePath("deleted"), "", "", ""), nil).expect(t, http.StatusGone)
	})
	t.Run("reset empties the file too", func(t *testing.T) {
		second.Reset()
		s, err := loadState(file)
		assert.NilError(t, err)
		assert.Check(t, is.Len(s.Instances, 0))
	})
}

func TestPersistence_CorruptStateFile_IsAClearError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state.json")
	assert.NilError(t, os.WriteFile(file, []byte("{not json"), 0o600))
	_, err := New(Options{StateFile: file})
	assert.ErrorContains(t, err, "delete it to start empty")
}

func TestPersistence_MissingStateFile_StartsEmpty(t *testing.T) {
	b, err := New(Options{StateFile: filepath.Join(t.TempDir(), "new.json")})
	assert.NilError(t, err)
	assert.Check(t, is.Len(b.Instances(), 0))
}
