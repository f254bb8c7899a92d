package engine

import (
	"context"
	"errors"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// boundPair is a binding fixture with two bound bindings "a" and "b" of instance "db".
func boundPair(t *testing.T) *fixture {
	t.Helper()
	f, _ := bindingFixture(t, nil)
	for _, name := range []string{"a", "b"} {
		f.createBinding(name, func(in *BindingIntent) { in.ExternalID = "bind-" + name })
		assert.Equal(t, f.driveBinding(name).State, StateSettled)
	}
	f.broker.ResetCalls()
	f.clockMoves()
	return f
}

// outcomes records what Unbind says of each binding.
type outcomes []UnbindOutcome

func (o *outcomes) record(u UnbindOutcome) error { *o = append(*o, u); return nil }

func (o outcomes) names() []string {
	var out []string
	for _, u := range o {
		out = append(out, u.Binding.Name)
	}
	return out
}

func (f *fixture) bindingNames() []string {
	f.t.Helper()
	bs, err := f.st.Bindings().List(context.Background(), ns, store.Filter{})
	assert.NilError(f.t, err)
	var out []string
	for _, b := range bs {
		out = append(out, b.Name)
	}
	return out
}

func TestUnbind_Selections_MarkAllThenDriveEach(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  UnbindRequest
		want []string
	}{
		{name: "by name, each once", req: UnbindRequest{Bindings: []string{"b", "a", "b"}}, want: []string{"b", "a"}},
		{name: "every binding of the instance", req: UnbindRequest{Instance: "db", All: true}, want: []string{"a", "b"}},
		{name: "some bindings of the instance", req: UnbindRequest{Instance: "db", Names: []string{"b"}}, want: []string{"b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := boundPair(t)
			var confirmed []string
			var got outcomes
			var said notes
			tc.req.Namespace, tc.req.Follow, tc.req.Unbound = ns, said.follow(true), got.record
			tc.req.Confirm = func(bs []*v1alpha1.ServiceBinding) (bool, error) {
				for _, b := range bs {
					confirmed = append(confirmed, b.Name)
				}
				return true, nil
			}

			res, err := f.engine.Unbind(context.Background(), tc.req)

			assert.NilError(t, err)
			assert.Assert(t, res.Confirmed)
			assert.DeepEqual(t, confirmed, tc.want)
			assert.DeepEqual(t, got.names(), tc.want)
			for i, u := range got {
				assert.Equal(t, u.Followed.State, StateDeleted)
				assert.Equal(t, said[i], `Unbinding "`+tc.want[i]+`"...`)
			}
			assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodUnbind), len(tc.want)))
			assert.Equal(t, len(f.bindingNames()), 2-len(tc.want))
		})
	}
}

func TestUnbind_BadSelectionOrNo_LeavesEveryRecordAndSecretAsItWas(t *testing.T) {
	for _, tc := range []struct {
		name    string
		req     UnbindRequest
		confirm bool
		want    string
	}{
		{name: "missing binding", req: UnbindRequest{Bindings: []string{"a", "nosuch"}},
			want: `binding "nosuch" not found in namespace "` + ns + `": list the bindings with "kubectl catalog get bindings"`},
		{name: "an instance named as a binding", req: UnbindRequest{Bindings: []string{"db"}},
			want: `"db" is an instance: unbind all its bindings with "kubectl catalog unbind db --all"`},
		{name: "missing binding of the instance", req: UnbindRequest{Instance: "db", Names: []string{"a", "c"}},
			want: `instance "db" has no binding "c" in namespace "` + ns + `"`},
		{name: "confirmation refused", req: UnbindRequest{Instance: "db", All: true}},
		{name: "dry run", req: UnbindRequest{Instance: "db", All: true, DryRun: DryRunClient}, confirm: true},
		{name: "dry run, abandon", req: UnbindRequest{Bindings: []string{"a"}, Abandon: true, DryRun: DryRunClient}, confirm: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := boundPair(t)
			before := f.clusterState()
			asked := false
			tc.req.Namespace = ns
			tc.req.Confirm = func([]*v1alpha1.ServiceBinding) (bool, error) { asked = true; return tc.confirm, nil }
			tc.req.Unbound = func(UnbindOutcome) error { t.Fatal("nothing is unbound"); return nil }

			_, err := f.engine.Unbind(context.Background(), tc.req)

			if tc.want != "" {
				assert.ErrorContains(t, err, tc.want)
			} else {
				assert.NilError(t, err)
			}
			assert.Equal(t, asked, tc.want == "" && !tc.req.DryRun.Enabled(), "asked only once the bindings are known, and not for a dry run")
			assert.DeepEqual(t, f.clusterState(), before)
			assert.Assert(t, is.Len(f.broker.Calls(), 0))
		})
	}
}

func TestUnbind_DryRunServer_SendsTheDeletionsAsDryRuns(t *testing.T) {
	f := boundPair(t)
	before := f.clusterState()

	res, err := f.engine.Unbind(context.Background(), UnbindRequest{Namespace: ns, Instance: "db", All: true, DryRun: DryRunServer})

	assert.NilError(t, err)
	assert.Assert(t, is.Len(res.Bindings, 2))
	assert.Assert(t, !res.Confirmed)
	assert.Equal(t, f.cluster.DryRuns(), 2)
	assert.DeepEqual(t, f.clusterState(), before)
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}

func TestUnbind_InstanceWithoutBindings_NothingToDo(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	var said notes

	res, err := f.engine.Unbind(context.Background(), UnbindRequest{Namespace: ns, Instance: "gone", All: true, Follow: said.follow(false)})

	assert.NilError(t, err)
	assert.Assert(t, is.Len(res.Bindings, 0))
	assert.DeepEqual(t, []string(said), []string{`Note: instance "gone" does not exist in namespace "` + ns + `"; looking for its bindings anyway.`})
}

func TestUnbind_Abandon_DropsTheRecordsWithoutTheBroker(t *testing.T) {
	f := boundPair(t)
	var got outcomes

	_, err := f.engine.Unbind(context.Background(), UnbindRequest{Namespace: ns, Bindings: []string{"a", "b"}, Abandon: true, Unbound: got.record})

	assert.NilError(t, err)
	assert.DeepEqual(t, got.names(), []string{"a", "b"})
	assert.Assert(t, got[0].Abandoned && got[1].Abandoned)
	assert.Assert(t, is.Len(f.bindingNames(), 0))
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}

func TestUnbind_BrokerFailing_OneIsItsError_SeveralAreCounted(t *testing.T) {
	t.Run("one binding", func(t *testing.T) {
		f := boundPair(t)
		f.broker.UnbindReturns(nil, fake.HTTPError("DELETE", 503, "", "down"))

		_, err := f.engine.Unbind(context.Background(), UnbindRequest{Namespace: ns, Bindings: []string{"a"}})

		assert.ErrorContains(t, err, `binding "a" is marked for deletion but not unbound yet (UnbindCallFailed)`)
		b := f.getBinding("a")
		assert.Assert(t, b.DeletionTimestamp != nil, "left pending, visibly")
	})
	t.Run("several bindings", func(t *testing.T) {
		f := boundPair(t)
		f.broker.UnbindReturns(nil, fake.HTTPError("DELETE", 503, "", "down"))
		var said notes

		_, err := f.engine.Unbind(context.Background(), UnbindRequest{Namespace: ns, Bindings: []string{"a", "b"}, Follow: said.follow(false)})

		assert.ErrorContains(t, err, `2 of 2 bindings are not unbound yet (a, b); the first: binding "a" is marked for deletion but not unbound yet`)
		assert.Equal(t, len(said), 4, "%q", said)
		assert.Equal(t, said[1][:len(`error: binding "a"`)], `error: binding "a"`)
	})
	t.Run("a failure of the caller counts", func(t *testing.T) {
		f := boundPair(t)

		_, err := f.engine.Unbind(context.Background(), UnbindRequest{Namespace: ns, Bindings: []string{"a"}, Follow: Follow{Wait: true},
			Unbound: func(UnbindOutcome) error { return errors.New("cannot print") }})

		assert.ErrorContains(t, err, "cannot print")
	})
}
