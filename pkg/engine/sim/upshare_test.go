package sim

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/projection"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Shared user-provided instances projected as environment variables (-sim.upshare):
// dev's user provisions user-provided instances, shares them with team-b and keeps
// changing their credentials, adding loader and interpreter variables (BASH_ENV,
// LD_PRELOAD, NODE_OPTIONS, PATH, and keys such as ENV that a prefix makes one) besides
// ordinary keys; team-b's user binds them into a workload as environment variables,
// without a prefix, with an ordinary one, and with one that makes a key a loader
// variable (BASH_ + ENV); dev's user binds them into her own workload without a prefix.
// Bind refuses some of these: the model tries them all the same. Workloads are objects
// of the simulated API server, changed by the real projector (workloads_test.go). Checked after every
// step: no Secret of a binding whose spec projects environment variables holds a key
// its projection would make a loader or interpreter variable; no workload holds, and no
// binding records, a projection as environment variables without a prefix of the
// credentials of another namespace's instance.

var upShare = flag.Bool("sim.upshare", false, "let dev's user share user-provided instances with changing credentials, and team-b's and dev's users bind them as environment variables")

// The user-provided instances, and the keys their credentials are drawn from.
var (
	upInstanceNames = []string{"up-0", "up-1"}
	upKeys          = []string{"user", "password", "host", "BASH_ENV", "LD_PRELOAD", "NODE_OPTIONS", "PATH", "ENV", "OPTIONS", "PYTHONPATH"}
)

// envBinding is a binding of a user-provided instance into a workload as environment
// variables: each name has its own prefix, so that a Secret left behind by one never
// meets a projection of another.
type envBinding struct{ name, prefix string }

var (
	// team-b's: without a prefix (refused: the instance is dev's), an ordinary one,
	// and one under which the key ENV becomes BASH_ENV.
	consumerEnvBindings = []envBinding{{"env-0", ""}, {"env-1", "UP_"}, {"env-2", "BASH_"}}
	// dev's own: without a prefix, as its own namespace's credentials may be.
	ownerEnvBindings = []envBinding{{"env-own", ""}}
)

// upCredentials draws credentials: each key or not, at least one.
func (w *world) upCredentials() map[string][]byte {
	out := map[string][]byte{}
	for _, k := range upKeys {
		if w.rng.IntN(2) == 0 {
			out[k] = fmt.Appendf(nil, "v%d", w.rng.IntN(1000))
		}
	}
	if len(out) == 0 {
		out["user"] = []byte("u")
	}
	return out
}

// upOwnerTask is a task of dev's user on her user-provided instances.
func (w *world) upOwnerTask(e *engine.Engine, ns string, follow engine.Follow) (string, func(context.Context) error) {
	inst := upInstanceNames[w.rng.IntN(len(upInstanceNames))]
	if name, task, ok := w.upCredsTask(e, ns, inst, follow); ok {
		// Credentials from a Secret, URL credentials, limits (upcreds_test.go).
		return name, task
	}
	// Mostly provision what is not there yet, and share what is not shared yet.
	x, err := w.checker.Instances().Get(context.Background(), ns, inst)
	n := w.rng.IntN(100)
	switch {
	case store.IsNotFound(err) && n < 75:
		n = 0
	case err == nil && !slices.Contains(x.Spec.SharedWith, "team-b") && n < 40:
		n = 50
	}
	switch {
	case n < 20:
		creds := w.upCredentials()
		return "provision " + inst + " --user-provided " + keyNames(creds), func(ctx context.Context) error {
			_, err := e.ProvisionUserProvided(ctx, engine.UserProvidedRequest{Namespace: ns, Name: inst,
				Credentials: engine.CredentialsInput{Read: func() (map[string][]byte, error) { return creds, nil }}, Follow: follow})
			return err
		}
	case n < 50:
		creds := w.upCredentials()
		return "update " + inst + " --credentials-json " + keyNames(creds), func(ctx context.Context) error {
			_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst,
				Credentials: engine.CredentialsInput{Read: func() (map[string][]byte, error) { return creds, nil }}, Follow: follow})
			return err
		}
	case n < 65:
		return "share " + inst + " with team-b", func(ctx context.Context) error {
			_, err := e.Share(ctx, engine.ShareRequest{Namespace: ns, Name: inst, To: "team-b"})
			return err
		}
	case n < 72:
		return "unshare " + inst + " from team-b", func(ctx context.Context) error {
			_, err := e.Unshare(ctx, engine.UnshareRequest{Namespace: ns, Name: inst, From: "team-b"})
			return err
		}
	case n < 77:
		return "deprovision " + inst, func(ctx context.Context) error {
			_, err := e.Deprovision(ctx, engine.DeprovisionRequest{Namespace: ns, Name: inst, Follow: follow})
			return err
		}
	case n < 92:
		return w.envBindTask(e, ns, "", inst, ownerEnvBindings, follow)
	}
	return w.envUnbindTask(e, ns, ownerEnvBindings, follow)
}

// upConsumerTask is a task of team-b's user on dev's user-provided instances.
func (w *world) upConsumerTask(p *proc, ns string, follow engine.Follow) (string, func(context.Context) error) {
	e := p.eng
	if w.rng.IntN(8) == 0 {
		return "write binding " + oldEnvBinding + " of a shared instance as env without a prefix", p.writeOldEnvBinding
	}
	if w.rng.IntN(4) == 0 {
		return w.envUnbindTask(e, ns, consumerEnvBindings, follow)
	}
	// Mostly an instance shared with him now.
	inst := upInstanceNames[w.rng.IntN(len(upInstanceNames))]
	var shared []string
	for _, name := range w.sharedWith(ns) {
		if slices.Contains(upInstanceNames, name) {
			shared = append(shared, name)
		}
	}
	if len(shared) > 0 && w.rng.IntN(4) > 0 {
		inst = shared[w.rng.IntN(len(shared))]
	}
	return w.envBindTask(e, ns, "dev", inst, consumerEnvBindings, follow)
}

// envBindTask binds one of bs to instance instNS/inst (instNS empty: ns's own) into
// Deployment web as environment variables.
func (w *world) envBindTask(e *engine.Engine, ns, instNS, inst string, bs []envBinding, follow engine.Follow) (string, func(context.Context) error) {
	b := bs[w.rng.IntN(len(bs))]
	what := inst
	if instNS != "" {
		what = instNS + "/" + inst
	}
	return fmt.Sprintf("bind %s to %s --to deployment/web --env --env-prefix %q", b.name, what, b.prefix), func(ctx context.Context) error {
		_, err := e.Bind(ctx, engine.BindRequest{Namespace: ns, Instance: inst, InstanceNamespace: instNS, Name: b.name, Follow: follow,
			Projections: []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "web", Env: true, EnvPrefix: b.prefix}}})
		return err
	}
}

func (w *world) envUnbindTask(e *engine.Engine, ns string, bs []envBinding, follow engine.Follow) (string, func(context.Context) error) {
	b := bs[w.rng.IntN(len(bs))]
	return "unbind " + b.name, func(ctx context.Context) error {
		_, err := e.Unbind(ctx, engine.UnbindRequest{Namespace: ns, Bindings: []string{b.name}, Follow: follow})
		return err
	}
}

// oldEnvBinding is the binding team-b's user writes himself, as bind recorded it before
// it refused environment variables of another namespace's credentials without a prefix:
// the engine must not project it as such.
const oldEnvBinding = "env-old"

// writeOldEnvBinding is team-b's user writing (or re-pointing) binding env-old: dev's
// shared user-provided instance, into Deployment web as environment variables without a
// prefix. It may stay unsettled (refused), as his own doing.
func (p *proc) writeOldEnvBinding(ctx context.Context) error {
	w := p.w
	inst := upInstanceNames[w.rng.IntN(len(upInstanceNames))]
	ps := []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "web", Env: true}}
	p.record = p.ns + "/" + oldEnvBinding
	w.edited[p.record] = true
	if cur, err := p.st.Bindings().Get(ctx, p.ns, oldEnvBinding); err == nil {
		cur = cur.DeepCopy()
		cur.Spec.InstanceName, cur.Spec.InstanceNamespace, cur.Spec.Projections = inst, "dev", ps
		_, err := p.st.Bindings().Update(ctx, cur)
		return err
	}
	_, err := p.st.Bindings().Create(ctx, &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: oldEnvBinding},
		Spec:       v1alpha1.ServiceBindingSpec{InstanceName: inst, InstanceNamespace: "dev", SecretName: oldEnvBinding, Projections: ps},
	})
	return err
}

func keyNames(creds map[string][]byte) string {
	return "{" + strings.Join(slices.Sorted(maps.Keys(creds)), ",") + "}"
}

// workloads are the projections the workloads hold, as read from them
// (workloads_test.go), by "namespace/binding/kind/name".
type workloads map[string]heldProjection

type heldProjection struct {
	namespace, binding, secret string
	w                          v1alpha1.WorkloadProjection
}

func projectionKey(namespace, binding string, p v1alpha1.WorkloadProjection) string {
	return namespace + "/" + binding + "/" + p.Kind + "/" + p.Name
}

// checkEnv is checked after every step, for the bindings written in it, and at
// quiescence, for every binding; each time for every workload's projections.
func (w *world) checkEnv(binds []*v1alpha1.ServiceBinding) {
	if !*upShare {
		return
	}
	ctx := context.Background()
	for _, b := range binds {
		if b.Namespace == "t" || !projectsEnv(b.Spec.Projections) {
			continue
		}
		w.checkEnvSecret(ctx, b.Namespace, b.Name, b.Spec.SecretName, b.Spec.Projections)
		if b.CrossNamespace() {
			if p := projection.UnprefixedEnv(b.Status.Projected); p != nil {
				w.fail("binding %s/%s records a projection of the credentials of instance %s/%s into %s %s as environment variables without a prefix",
					b.Namespace, b.Name, b.Spec.InstanceNamespace, b.Spec.InstanceName, p.Kind, p.Name)
			}
		}
	}
	held := w.heldWorkloads() // workloads_test.go
	for _, k := range slices.Sorted(maps.Keys(held)) {
		h := held[k]
		if h.namespace == "t" || !projectsEnv([]v1alpha1.WorkloadProjection{h.w}) {
			continue
		}
		w.checkEnvSecret(ctx, h.namespace, h.binding, h.secret, []v1alpha1.WorkloadProjection{h.w})
		if h.w.EnvPrefix != "" {
			continue
		}
		b, err := w.checker.Bindings().Get(ctx, h.namespace, h.binding)
		if err != nil {
			continue
		}
		if b.CrossNamespace() {
			w.fail("%s %s of namespace %s receives the credentials of instance %s/%s (binding %s) as environment variables without a prefix",
				h.w.Kind, h.w.Name, h.namespace, b.Spec.InstanceNamespace, b.Spec.InstanceName, h.binding)
		}
	}
}

// checkEnvSecret fails when Secret secret of binding ns/binding holds a key that ps
// would make a loader or interpreter variable.
func (w *world) checkEnvSecret(ctx context.Context, ns, binding, secret string, ps []v1alpha1.WorkloadProjection) {
	s, err := w.checker.GetSecret(ctx, ns, secret)
	if store.IsNotFound(err) {
		return
	}
	if err != nil {
		panic(err)
	}
	if bad := projection.ForbiddenKeys(slices.Collect(maps.Keys(s.Data)), ps); len(bad) > 0 {
		w.fail("Secret %s/%s of binding %s, projected as environment variables, holds %v: loader or interpreter variables", ns, secret, binding, bad)
	}
}

func projectsEnv(ps []v1alpha1.WorkloadProjection) bool {
	for _, p := range ps {
		if p.Env || p.EnvPrefix != "" {
			return true
		}
	}
	return false
}

// waitsForCredentials reports a user-provided instance whose credentials Secret is
// missing (a provision --user-provided interrupted between its record and its Secret,
// which told its user so): it waits for its user to set them again (update
// --credentials-*), with a condition that says so.
func (w *world) waitsForCredentials(x *v1alpha1.ServiceInstance) bool {
	if x.Spec.UserProvided == nil || x.DeletionTimestamp != nil {
		return false
	}
	c := meta.FindStatusCondition(x.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil || c.Reason != engine.ReasonProvisionCredentialsUnavailable {
		return false
	}
	_, err := w.checker.GetSecret(context.Background(), x.Namespace, x.Spec.UserProvided.CredentialsSecret)
	return store.IsNotFound(err)
}
