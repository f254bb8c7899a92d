package authority

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Unvouched is a record reconcile can act on only by lending it the rights of the user
// running it: no trust policy is in force, so its author cannot be verified, and its
// next step reads a Secret or changes a workload in its author's name.
type Unvouched struct {
	// Kind is the record kind (v1alpha1.KindServiceInstance, ...).
	Kind, Namespace, Name string
	// Lends says, one line each, what the runner's rights would do for it: which Secret
	// is read and where its content goes (a broker's URL, a Secret), which workload is
	// changed.
	Lends []string
	// uids are the records whose author's authority the lends stand for: the record,
	// and the broker (or user-provided instance) of its namespace that it goes through.
	uids []types.UID
}

// lendable reports whether the engine would act on rec with the runner's rights under
// WithRunnersRights where without it it refuses: rec's author cannot be verified, and
// no other person may have written it behind the runner's back (runnersRightsBarred).
func (auth *Authority) lendable(ctx context.Context, rec v1alpha1.Record) bool {
	a := auth.of(ctx, rec)
	return !a.self && a.unverified != "" && !a.notRunners
}

// UnvouchedRecord says what acting on rec, a record with work pending, with the rights
// of the user running reconcile would lend those rights for (see Unvouched); nil when
// nothing: the trust policy is in force (the runner's rights are never lent then), its
// author is the runner, or its next step needs no author's authority. Only records of
// rec's own namespace are looked at: a binding's instance or broker in another namespace
// is never lent the runner's rights this way.
func (auth *Authority) UnvouchedRecord(ctx context.Context, rec v1alpha1.Record) (*Unvouched, error) {
	if auth.InForce(ctx) {
		return nil, nil
	}
	l := &lending{auth: auth, rec: rec, u: &Unvouched{Namespace: rec.GetNamespace(), Name: rec.GetName()},
		own: auth.lendable(ctx, rec), deleting: rec.GetDeletionTimestamp() != nil}
	var err error
	switch r := rec.(type) {
	case *v1alpha1.Broker:
		l.u.Kind = v1alpha1.KindBroker
		if a := r.Spec.Auth; a != nil && l.own && r.Namespace != auth.env().CatalogNamespace {
			l.lend(fmt.Sprintf("Secret %q (its credentials) goes to %s", a.SecretRef.Name, r.Spec.URL), r)
		}
	case *v1alpha1.ServiceInstance:
		l.u.Kind = v1alpha1.KindServiceInstance
		err = l.through(ctx, r, r.Spec.ParametersFrom)
	case *v1alpha1.ServiceBinding:
		l.u.Kind = v1alpha1.KindServiceBinding
		err = l.binding(ctx, r)
	}
	if err != nil {
		return nil, err
	}
	if len(l.u.Lends) == 0 {
		return nil, nil
	}
	return l.u, nil
}

// lending gathers what acting on rec with the runner's rights would lend them for.
type lending struct {
	auth *Authority
	rec  v1alpha1.Record
	u    *Unvouched
	// own: rec itself would be lent the runner's rights (lendable).
	own bool
	// deleting: rec is being deleted, so no call sends its parameters or copies, and no
	// workload gets its projection.
	deleting bool
}

// lend lists line, lent for the records rs.
func (l *lending) lend(line string, rs ...v1alpha1.Record) {
	u := l.u
	if !slices.Contains(u.Lends, line) {
		u.Lends = append(u.Lends, line)
	}
	for _, r := range rs {
		if !slices.Contains(u.uids, r.GetUID()) {
			u.uids = append(u.uids, r.GetUID())
		}
	}
}

// through lends what a call through the broker of inst needs: its credentials, and
// (with from) the parameters Secrets of rec sent to it.
func (l *lending) through(ctx context.Context, inst *v1alpha1.ServiceInstance, from []v1alpha1.ParametersFromSource) error {
	if inst.IsUserProvided() {
		return nil
	}
	rec := l.rec
	ns := l.auth.brokerNamespace(inst)
	if ns != rec.GetNamespace() {
		// A cluster broker: its credentials are the administrators'; parameters read
		// in rec's author's name.
		if l.own && !l.deleting {
			for _, s := range secretsOf(from) {
				l.lend(fmt.Sprintf("Secret %q (parameters) goes to cluster broker %q", s, inst.Spec.BrokerName), rec)
			}
		}
		return nil
	}
	b, err := l.auth.env().Store.Brokers().Get(ctx, ns, inst.Spec.BrokerName)
	if store.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if a := b.Spec.Auth; a != nil && l.auth.lendable(ctx, b) {
		l.lend(fmt.Sprintf("Secret %q (credentials of broker %q) goes to %s", a.SecretRef.Name, b.Name, b.Spec.URL), b)
	}
	if l.own && !l.deleting {
		// Parameters from Secrets go to a namespace broker only if its author, too,
		// may read them (CheckParametersTo).
		rs := []v1alpha1.Record{rec}
		if l.auth.lendable(ctx, b) {
			rs = append(rs, b)
		}
		for _, s := range secretsOf(from) {
			l.lend(fmt.Sprintf("Secret %q (parameters) goes to %s (broker %q)", s, b.Spec.URL, b.Name), rs...)
		}
	}
	return nil
}

// binding lends what the next step of binding r needs: the call through its instance's
// broker, the copies into its Secret and the workloads it projects into. An instance of
// another namespace is never looked at.
func (l *lending) binding(ctx context.Context, r *v1alpha1.ServiceBinding) error {
	ins, name := r.InstanceRef()
	if ins != r.Namespace {
		return nil
	}
	inst, err := l.auth.env().Store.Instances().Get(ctx, ins, name)
	if store.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := l.through(ctx, inst, r.Spec.ParametersFrom); err != nil || l.deleting || !l.own {
		return err
	}
	if up := inst.Spec.UserProvided; up != nil {
		rs := []v1alpha1.Record{r}
		if l.auth.lendable(ctx, inst) {
			rs = append(rs, inst)
		}
		l.lend(fmt.Sprintf("Secret %q (credentials of user-provided instance %q) is copied into Secret %q", up.CredentialsSecret, inst.Name, r.Spec.SecretName), rs...)
	}
	for _, tr := range r.Spec.SecretTransforms {
		if a := tr.AddKeysFrom; a != nil {
			l.lend(fmt.Sprintf("Secret %q is copied into Secret %q", a.SecretRef.Name, r.Spec.SecretName), r)
		}
	}
	for _, p := range r.Spec.Projections {
		l.lend(fmt.Sprintf("%s %q is changed to mount Secret %q", p.Kind, p.Name, r.Spec.SecretName), r)
	}
	return nil
}

// secretsOf is the names of the Secrets from reads parameters from.
func secretsOf(from []v1alpha1.ParametersFromSource) []string {
	var names []string
	for _, pf := range from {
		if pf.SecretKeyRef != nil {
			names = append(names, pf.SecretKeyRef.Name)
		}
	}
	return names
}
