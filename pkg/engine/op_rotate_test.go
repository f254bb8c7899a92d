package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

func TestRotate_NewCredentialsInTheSecret_OldIDUnbound(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.createBinding("db", nil)
	assert.Equal(t, f.driveBinding("db").State, StateSettled)
	f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": "rotated"}}, nil)
	f.clockMoves()
	var said notes

	res, err := f.engine.Rotate(context.Background(), RotateRequest{Namespace: ns, Name: "db", Follow: said.follow(true)})

	assert.NilError(t, err)
	assert.Equal(t, res.OldID, bindingOSB)
	assert.Assert(t, res.NewID != bindingOSB)
	assert.Equal(t, res.SecretName, "db")
	assert.Assert(t, res.Rotated)
	assert.Assert(t, !res.OldPending)
	assert.DeepEqual(t, []string(said), []string{`Rotating binding "db" in namespace "` + ns + `": new binding id ` + res.NewID + ` replaces ` + bindingOSB + `...`})
	assert.Equal(t, string(f.secretData("db")["password"]), "rotated")
	unbinds := f.broker.CallsTo(fake.MethodUnbind)
	assert.Assert(t, is.Len(unbinds, 1))
	assert.Equal(t, unbinds[0].Request.(osb.UnbindRequest).BindingID, bindingOSB)
}

func TestRotate_MissingOrUnboundBinding_ChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		name, binding, want string
	}{
		{name: "missing", binding: "nosuch", want: `binding "nosuch" not found in namespace "` + ns + `": list the bindings with "kubectl catalog get bindings"`},
		{name: "not bound yet", binding: "db", want: `binding "db" is not bound yet, so there is nothing to rotate`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, nil)
			f.createBinding("db", nil)
			before := f.clusterState()

			_, err := f.engine.Rotate(context.Background(), RotateRequest{Namespace: ns, Name: tc.binding, Follow: Follow{Wait: true}})

			assert.ErrorContains(t, err, tc.want)
			assert.DeepEqual(t, f.clusterState(), before)
			assert.Assert(t, is.Len(f.broker.Calls(), 0))
		})
	}
}

// A rotation on the user's command writes the record as the user's own (they become its
// author); a scheduled one keeps the author the record has, so that whoever runs the
// schedule lends it no authority.
func TestRotate_UserCommandWritesAsTheUser_ScheduledKeepsTheAuthor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rotate func(f *fixture) error
		author string
	}{
		{name: "bind --rotate", author: "runner", rotate: func(f *fixture) error {
			_, err := f.engine.Rotate(context.Background(), RotateRequest{Namespace: ns, Name: "db"})
			return err
		}},
		{name: "reconcile --rotate-due", author: "alice", rotate: func(f *fixture) error {
			_, err := f.engine.RotateScheduled(context.Background(), ns, "db")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, nil)
			alice := writerStore(f, "alice", "tok")
			_, err := alice.Bindings().Create(store.WithIntent(context.Background()), NewBinding(BindingIntent{Namespace: ns, Name: "db", Instance: "db", SecretName: "db", ExternalID: bindingOSB}))
			assert.NilError(t, err)
			assert.Equal(t, f.driveBindingWithRunnersRights("db").State, StateSettled)
			f.engine.cfg.Store = writerStore(f, "runner", "tok")
			f.clockMoves()

			assert.NilError(t, tc.rotate(f))

			b := f.getBinding("db")
			assert.Assert(t, b.RotatedFrom() != nil)
			assert.Equal(t, store.AuthorOf(b).Username, tc.author)
			assert.Equal(t, store.AuthorOf(b).Token, "tok")
		})
	}
}

// driveBindingWithRunnersRights drives a binding as a verb does.
func (f *fixture) driveBindingWithRunnersRights(name string) Result {
	f.t.Helper()
	res, err := f.engine.FollowBinding(context.Background(), ns, name, "bind", nil, Follow{Wait: true})
	assert.NilError(f.t, err)
	return res
}
