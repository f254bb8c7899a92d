package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// beforeSecretWrite is an API client that calls hook before each create or update of a
// Secret, as another process moving between a read and a write.
type beforeSecretWrite struct {
	kubernetes.Interface
	hook func(name string)
}

func (c beforeSecretWrite) CoreV1() corev1client.CoreV1Interface {
	return beforeSecretWriteCoreV1{CoreV1Interface: c.Interface.CoreV1(), hook: c.hook}
}

type beforeSecretWriteCoreV1 struct {
	corev1client.CoreV1Interface
	hook func(name string)
}

func (c beforeSecretWriteCoreV1) Secrets(ns string) corev1client.SecretInterface {
	return beforeSecretWriteSecrets{SecretInterface: c.CoreV1Interface.Secrets(ns), hook: c.hook}
}

type beforeSecretWriteSecrets struct {
	corev1client.SecretInterface
	hook func(name string)
}

func (c beforeSecretWriteSecrets) Create(ctx context.Context, s *corev1.Secret, o metav1.CreateOptions) (*corev1.Secret, error) {
	c.hook(s.Name)
	return c.SecretInterface.Create(ctx, s, o)
}

func (c beforeSecretWriteSecrets) Update(ctx context.Context, s *corev1.Secret, o metav1.UpdateOptions) (*corev1.Secret, error) {
	c.hook(s.Name)
	return c.SecretInterface.Update(ctx, s, o)
}

// Two drivers copy a user-provided instance's credentials to one binding at once: one
// read the credentials, then the user changed them and the other driver copied the new
// ones and recorded that copy; the first driver's write of the older copy must not land
// over it, or the binding keeps the older credentials for good while its status says it
// has the new ones (found by -sim.upcreds, seed 84).
func TestUserProvided_CopyRace_AnOlderCopyNeverLandsOverANewerOne(t *testing.T) {
	for _, tc := range []struct {
		name string
		// first: the binding has no copy yet (its first copy races); else it has one of
		// the first credentials.
		first bool
	}{{"a binding's first copy", true}, {"new credentials to copy", false}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.engine.cfg.Projector = &recordingProjector{projected: map[string]bool{}}
			ctx := context.Background()
			f.userProvided(map[string]string{"password": "first"})
			newCredentials := func(password string) {
				f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.UserProvided.Revision++ })
				assert.NilError(t, f.engine.WriteUserProvidedCredentials(ctx, f.get("db"), toBytes(map[string]string{"password": password})))
			}
			f.createBinding("app", func(in *BindingIntent) { in.ExternalID = "id-app" })
			if !tc.first {
				assert.Equal(t, f.driveBinding("app").State, StateSettled)
			}
			newCredentials("older")

			// Another process (its own store and engine) copies "older"; before its write
			// lands, the user sets "newer" and this fixture's engine copies them.
			armed := true
			other := New(Config{
				Store: store.New(beforeSecretWrite{Interface: f.cluster.Core, hook: func(name string) {
					if name != "app" || !armed {
						return
					}
					armed = false
					newCredentials("newer")
					res, err := f.engine.StepBinding(ctx, f.getBinding("app"))
					assert.NilError(t, err)
					assert.Equal(t, string(f.secretData("app")["password"]), "newer", res.Message)
				}}, f.cluster.Metadata, store.WithClock(func() time.Time { return f.now })),
				Brokers:          fake.Brokers{Client: f.broker},
				Platform:         StaticPlatform{Cluster: "cluster-1", User: testUser},
				CatalogNamespace: storetest.CatalogNamespace, Holder: "other",
				Now:    func() time.Time { return f.now },
				Jitter: func() float64 { return 0.5 },
			})
			ores, oerr := other.StepBinding(WithRunnersRights(ctx), f.getBinding("app"))
			t.Logf("the other process: %+v, %v", ores, oerr)
			assert.Assert(t, !armed, "the other process wrote no Secret")

			// Whatever either recorded, the binding ends with the newer credentials.
			f.now = f.now.Add(time.Hour)
			res := f.driveBinding("app")
			assert.Equal(t, res.State, StateSettled, res.Message)
			f.step("db")
			assert.Equal(t, string(f.secretData("app")["password"]), "newer",
				"the binding's Secret holds an older copy than its status says (%s)", f.getBinding("app").Status.Bound.SourceVersion)
		})
	}
}
