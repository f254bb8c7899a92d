package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// The cross-namespace rule: a binding of team-b counts for dev/db (its deletion waits for
// it, it is marked for deletion) only while db grants team-b, or granted it and the
// broker may hold the binding. A binding of a namespace db never granted is neither
// waited for nor touched, whatever its status says.
func TestXNS_ADeletionWaitsOnlyForTheBindingsItsGrantCounts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		grant  func(*v1alpha1.ServiceInstance)
		status func(*v1alpha1.ServiceBinding)
		waits  bool
	}{
		{name: "never granted, a junk retired id", status: func(b *v1alpha1.ServiceBinding) { b.Status.Retired = []string{"not-mine"} }},
		{name: "never granted, bound under an id of its own", status: func(b *v1alpha1.ServiceBinding) {
			b.Status.Bound = &v1alpha1.BoundState{BindingID: b.Spec.ExternalID}
		}},
		{name: "never granted, a place forged nowhere but its own status", status: func(b *v1alpha1.ServiceBinding) {
			b.Status.ExternalIDs = []string{b.Spec.ExternalID}
		}},
		{name: "granted before, bound", waits: true,
			grant:  func(i *v1alpha1.ServiceInstance) { i.Status.SharedBefore = []string{consumerNS} },
			status: func(b *v1alpha1.ServiceBinding) { b.Status.Bound = &v1alpha1.BoundState{BindingID: b.Spec.ExternalID} }},
		{name: "granted before, a place among its consumers, bound", waits: true,
			grant: func(i *v1alpha1.ServiceInstance) {
				i.Status.Consumers = []v1alpha1.ConsumerReservation{{Namespace: consumerNS, Name: "pin", UID: "u"}}
			},
			status: func(b *v1alpha1.ServiceBinding) { b.Status.Bound = &v1alpha1.BoundState{BindingID: b.Spec.ExternalID} }},
		{name: "granted before, never bound",
			grant: func(i *v1alpha1.ServiceInstance) { i.Status.SharedBefore = []string{consumerNS} }},
		{name: "granted now, never bound", waits: true,
			grant: func(i *v1alpha1.ServiceInstance) { i.Spec.SharedWith = []string{consumerNS} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, nil)
			ctx := context.Background()
			if tc.grant != nil {
				f.editInstance(tc.grant)
			}
			b := NewBinding(BindingIntent{Namespace: consumerNS, Name: "pin", Instance: "db", InstanceNamespace: ns, SecretName: "pin"})
			if tc.status != nil {
				tc.status(b)
			}
			_, err := f.st.Bindings().Create(store.WithIntent(ctx), b)
			assert.NilError(t, err)

			assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
			res := f.step("db")

			pin, err := f.bindingIn(consumerNS, "pin")
			assert.NilError(t, err)
			if tc.waits {
				assert.Check(t, is.Contains(res.Message, "waiting for its bindings (team-b/pin)"))
				assert.Check(t, pin.DeletionTimestamp != nil, "a binding that counts is marked for deletion")
				assert.Check(t, is.Len(f.broker.CallsTo(fake.MethodDeprovision), 0))
				return
			}
			for range 3 {
				if res.State == StateDeleted {
					break
				}
				res = f.step("db")
			}
			assert.Equal(t, res.State, StateDeleted, res.Message)
			assert.Check(t, is.Len(f.broker.CallsTo(fake.MethodDeprovision), 1), "the deprovision reaches the broker")
			assert.Check(t, pin.DeletionTimestamp == nil, "a record of a namespace never granted is not touched")
		})
	}
}

// bob binds dev/db, shared with team-b, then writes a junk id into his binding's
// status.retired; the owner unshares. The junk id is forgotten with a visible reason, the
// binding is unbound at the broker under the id it does own, and db's deletion reaches
// the broker: synchronous and asynchronous unbinds alike.
func TestXNS_AJunkRetiredID_KeepsNeitherTheRevokedBindingNorTheOwnersDeletionWaiting(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async unbind: %v", async), func(t *testing.T) {
			f := boundFromTeamB(t)
			ctx := context.Background()
			rec := &fakeEvents{}
			f.engine.cfg.Events = rec
			app, err := f.bindingIn(consumerNS, "app")
			assert.NilError(t, err)
			boundID := app.Status.Bound.BindingID
			_, err = f.st.Bindings().UpdateWithRetry(ctx, consumerNS, "app", func(b *v1alpha1.ServiceBinding) error {
				b.Status.Retired = append(b.Status.Retired, "not-mine")
				return nil
			})
			assert.NilError(t, err)
			if async {
				f.broker.UnbindReturns(&osb.UnbindResponse{StatusCode: 202, Async: true, Operation: "unbind-op"}, nil)
				f.broker.SetBindingPollSequence("unbind-op", fake.Succeeded())
			}

			_, err = f.engine.Unshare(ctx, UnshareRequest{Namespace: ns, Name: "db", From: consumerNS, DryRun: DryRunNone})
			assert.NilError(t, err)
			var res Result
			for range 5 {
				if res = f.stepBindingIn(consumerNS, "app"); res.State == StateDeleted {
					break
				}
				f.advance(time.Minute)
			}
			assert.Equal(t, res.State, StateDeleted, res.Message)
			unbinds := f.broker.CallsTo(fake.MethodUnbind)
			assert.Assert(t, len(unbinds) > 0)
			for _, c := range unbinds {
				assert.Check(t, c.Request.(osb.UnbindRequest).BindingID == boundID, "only the binding's own id is sent: %+v", c)
			}
			var notes []string
			for _, ev := range rec.evs {
				if ev.Reason == "UnownedIDsForgotten" {
					notes = append(notes, ev.Namespace+"/"+ev.Name+": "+ev.Note)
				}
			}
			assert.Assert(t, len(notes) == 1 && strings.Contains(notes[0], `team-b/catalog-binding.app: binding "app" in namespace "team-b" lists OSB id(s) [not-mine]`), "%v", notes)

			_, err = f.engine.Deprovision(ctx, DeprovisionRequest{Namespace: ns, Name: "db", DryRun: DryRunNone, Follow: Follow{Wait: true}})
			assert.NilError(t, err)
			assert.Check(t, is.Len(f.broker.CallsTo(fake.MethodDeprovision), 1), "the owner's deprovision reaches the broker")
		})
	}
}

// A binding written in team-b naming an instance of dev learns nothing of dev from what
// the engine writes about it (its status and Events): the same whether dev/db is
// missing, not shared, shared elsewhere under an allowed-namespaces list, or its status
// remembers other grants; whatever the binding's status says.
func TestXNS_AForgedBinding_IsNoOracleForAnotherNamespacesInstances(t *testing.T) {
	worlds := []struct {
		name string
		make func(t *testing.T) *fixture
	}{
		{name: "no instance", make: func(t *testing.T) *fixture {
			f := newFixture(t)
			f.engine.cfg.Projector = &recordingProjector{projected: map[string]bool{}}
			return f
		}},
		{name: "not shared", make: func(t *testing.T) *fixture { f, _ := bindingFixture(t, nil); return f }},
		{name: "shared elsewhere, allowed namespaces", make: func(t *testing.T) *fixture {
			f, _ := bindingFixture(t, nil)
			f.editInstance(func(i *v1alpha1.ServiceInstance) {
				i.Spec.SharedWith, i.Spec.AllowedNamespaces = []string{"team-c"}, []string{ns, "team-c"}
				i.Status.SharedBefore = []string{"team-c", "team-d"}
			})
			return f
		}},
		{name: "being deleted", make: func(t *testing.T) *fixture {
			f, _ := bindingFixture(t, nil)
			assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
			return f
		}},
	}
	forgeries := []struct {
		name   string
		status func(*v1alpha1.ServiceBinding)
		delete bool
	}{
		{name: "new"},
		{name: "bind in flight", status: func(b *v1alpha1.ServiceBinding) {
			b.Status.InFlight = &v1alpha1.Operation{Type: v1alpha1.OperationBind, BindingID: b.Spec.ExternalID, InstanceID: "x", RequestID: "r", StartedAt: metav1.Now()}
		}},
		{name: "bound, deleted", delete: true, status: func(b *v1alpha1.ServiceBinding) {
			b.Status.Bound = &v1alpha1.BoundState{BindingID: b.Spec.ExternalID}
		}},
		{name: "a junk retired id", status: func(b *v1alpha1.ServiceBinding) { b.Status.Retired = []string{"not-mine"} }},
		{name: "a user-provided copy", status: func(b *v1alpha1.ServiceBinding) {
			b.Status.Bound = &v1alpha1.BoundState{BindingID: b.Spec.ExternalID, UserProvided: true, SourceVersion: "1"}
		}},
	}
	for _, forged := range forgeries {
		t.Run(forged.name, func(t *testing.T) {
			var first string
			for _, w := range worlds {
				f := w.make(t)
				rec := &fakeEvents{}
				f.engine.cfg.Events = rec
				ctx := context.Background()
				b := NewBinding(BindingIntent{Namespace: consumerNS, Name: "probe", Instance: "db", InstanceNamespace: ns, SecretName: "probe",
					ExternalID: v1alpha1.NewNamespaceBoundID(consumerNS)})
				if forged.status != nil {
					forged.status(b)
				}
				_, err := f.st.Bindings().Create(store.WithIntent(ctx), b)
				assert.NilError(t, err)
				if forged.delete {
					assert.NilError(t, f.st.Bindings().Delete(ctx, consumerNS, "probe"))
				}
				var seen []string
				for range 3 {
					res := f.stepBindingIn(consumerNS, "probe")
					seen = append(seen, fmt.Sprintf("state %s: %s", res.State, res.Message))
				}
				got, err := f.bindingIn(consumerNS, "probe")
				assert.NilError(t, err)
				for _, c := range got.Status.Conditions {
					seen = append(seen, fmt.Sprintf("condition %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
				}
				seen = append(seen, fmt.Sprintf("phase %s, deleting %v", got.Status.Phase, got.DeletionTimestamp != nil))
				for _, ev := range rec.evs {
					seen = append(seen, fmt.Sprintf("event %s/%s %s: %s", ev.Namespace, ev.Name, ev.Reason, ev.Note))
				}
				assert.Check(t, is.Len(f.broker.Calls(), 0), "%s: nothing is sent to dev's broker", w.name)
				c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionRefused)
				assert.Check(t, c != nil && c.Reason == ReasonRefusedNotShared, "%s: %+v", w.name, got.Status.Conditions)
				all := strings.Join(seen, "\n")
				if first == "" {
					first = all
					continue
				}
				assert.Equal(t, all, first, "%s writes something else than %s", w.name, worlds[0].name)
			}
		})
	}
}

// Issue 45's defect 7: a ConfigMap labelled as a binding of dev/db that this release
// cannot read (a newer release's format, or an unreadable spec) and that carries the
// catalog's finalizer blocks db's deletion, in db's own namespace and in one db grants
// or granted; one without the finalizer, or of a namespace db never granted, does not.
func TestXNS_AnUnreadableBindingWithTheFinalizer_BlocksItsInstancesDeletion(t *testing.T) {
	for _, where := range []struct {
		ns      string
		granted bool
	}{{ns, true}, {consumerNS, true}, {"team-x", false}} {
		for _, format := range []string{"newer release", "unreadable spec"} {
			for _, finalized := range []bool{true, false} {
				blocks := finalized && where.granted
				t.Run(fmt.Sprintf("%s, %s, finalizer %v", where.ns, format, finalized), func(t *testing.T) {
					f, _ := bindingFixture(t, nil)
					ctx := context.Background()
					f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Status.SharedBefore = []string{consumerNS} })
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: where.ns, Name: "catalog-binding.other-release",
						Labels:      map[string]string{store.LabelKind: v1alpha1.KindServiceBinding, store.LabelInstance: "db", store.LabelManagedBy: store.ManagedBy},
						Annotations: map[string]string{}}}
					if where.ns != ns {
						cm.Labels[store.LabelInstanceNamespace] = ns
					}
					if finalized {
						cm.Finalizers = []string{store.Finalizer}
					}
					if format == "newer release" {
						cm.Annotations[store.AnnotationFormat] = "99"
						cm.Data = map[string]string{store.DataKey: "{}"}
					} else {
						cm.Data = map[string]string{"spec": "{not json"}
					}
					_, err := f.cluster.Core.CoreV1().ConfigMaps(where.ns).Create(ctx, cm, metav1.CreateOptions{})
					assert.NilError(t, err)

					assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
					var res Result
					for range 3 {
						if res = f.step("db"); res.State == StateDeleted {
							break
						}
					}
					if !blocks {
						assert.Equal(t, res.State, StateDeleted, res.Message)
						assert.Check(t, is.Len(f.broker.CallsTo(fake.MethodDeprovision), 1))
						return
					}
					assert.Assert(t, res.State != StateDeleted, "%+v", res)
					assert.Check(t, is.Len(f.broker.CallsTo(fake.MethodDeprovision), 0), "no DELETE under a binding another release may hold")
					assert.Check(t, is.Contains(res.Message, "other-release"))
					assert.Check(t, is.Contains(res.Message, "carry the catalog's finalizer"))
					got, err := f.cluster.Core.CoreV1().ConfigMaps(where.ns).Get(ctx, cm.Name, metav1.GetOptions{})
					assert.NilError(t, err)
					assert.Check(t, got.DeletionTimestamp != nil, "it is marked for deletion, for the release that reads it")

					// Its own release unbinds it: the finalizer goes, and db's deletion goes on.
					got.Finalizers = nil
					_, err = f.cluster.Core.CoreV1().ConfigMaps(where.ns).Update(ctx, got, metav1.UpdateOptions{})
					assert.NilError(t, err)
					for range 3 {
						if res = f.step("db"); res.State == StateDeleted {
							break
						}
					}
					assert.Equal(t, res.State, StateDeleted, res.Message)
				})
			}
		}
	}
}
