package authority

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Authorship outcomes of one record.
const (
	// AuthorshipAdopted: the record now names the runner as its author, under the
	// current trust token (with a dry run: it would).
	AuthorshipAdopted = "adopted"
	// AuthorshipVerified: the record's author is verified already; it is left alone.
	AuthorshipVerified = "verified"
	// AuthorshipRefused: the runner could not have written the record's spec; it is
	// left unchanged.
	AuthorshipRefused = "refused"
)

// AdoptedRecord is what became of one record.
type AdoptedRecord struct {
	Kind, Name string
	// Was is the author the record named before ("" when none).
	Was     string
	Outcome string
	// Detail says why a record was refused, or what changed.
	Detail string
	// Vouch is what adopting it means, for a record adopted (or to be).
	Vouch *Vouch
}

// AdoptAuthorshipResult lists the records of the namespace and what became of each.
type AdoptAuthorshipResult struct {
	Records []AdoptedRecord
	// Runner is the user the records were (or would be) stamped with.
	Runner string
}

// Refused reports whether a record was refused.
func (r AdoptAuthorshipResult) Refused() int {
	n := 0
	for _, rec := range r.Records {
		if rec.Outcome == AuthorshipRefused {
			n++
		}
	}
	return n
}

// AdoptAuthorship re-stamps, as the runner's own, the records of a namespace whose
// author cannot be verified: written before the trust policy now in force, by anyone who
// could write ConfigMaps there. Only a record whose spec the runner could have written is
// adopted, each checked against the runner's rights as a verb writing that spec would
// be: the Secrets it names readable, its plan allowed, its broker usable, the workloads
// it projects into changeable, its sharing grants and a cross-namespace binding's grant.
// A record failing a check is reported with the reason and left unchanged, and so is a
// record whose labels were tampered with. Only the author stamp changes (the author
// annotations and the trust token), never the spec. A record being deleted (a namespace
// Terminating) is adopted all the same, so that reconcile can finish it, and so is one
// being deleted whose verified author is someone else: the namespace's deletion may have
// taken their RoleBindings, and with them the rights reconcile checks the record against.
//
// Adopting a record vouches for it: from then on its Secrets go where it says on the
// runner's authority. So every record to adopt carries what that means (Vouch), and
// before anything is written confirm is given them all; an error from it (or a nil
// confirm) writes nothing and is returned. With dryClient nothing is written and nothing
// is asked; otherwise writes marks the context of each write (a server dry run, which
// changes nothing and is not asked about either when server is set).
func (auth *Authority) AdoptAuthorship(ctx context.Context, ns string, dryClient, server bool, writes func(context.Context) context.Context, confirm func([]Vouch) error) (AdoptAuthorshipResult, error) {
	var res AdoptAuthorshipResult
	state := auth.State(ctx)
	if state.Token == "" {
		return res, fmt.Errorf("the catalog's trust policy is not in force (%s): records can be adopted only under it; an administrator runs \"kubectl catalog init\" first", state.Reason)
	}
	id, err := auth.env().Platform.Identity(ctx)
	if err != nil || id == nil {
		return res, fmt.Errorf("cannot tell who you are to the API server (SelfSubjectReview), whom the records would name as their author: %v", err)
	}
	res.Runner = id.Username
	recs, err := auth.recordsOf(ctx, ns)
	if err != nil {
		return res, err
	}
	adopted := map[types.UID]bool{}
	var toWrite []int
	for _, kr := range recs {
		rec := kr.rec
		out := AdoptedRecord{Kind: strings.ToLower(kr.kind), Name: rec.GetName(), Was: store.AuthorOf(rec).Username}
		au := store.AuthorOf(rec)
		switch {
		case Tampered(rec) != "":
			out.Outcome, out.Detail = AuthorshipRefused, Tampered(rec)
		case au.Username != "" && au.Token == state.Token && (rec.GetDeletionTimestamp() == nil || au.Username == id.Username):
			out.Outcome, out.Detail = AuthorshipVerified, fmt.Sprintf("written by %s under the trust policy in force", au.Username)
		default:
			adopted[rec.GetUID()] = true
			if err := auth.checkAuthorship(Adopting(ctx, adopted), rec); err != nil {
				if _, refused := AsRefused(err); !refused && !store.IsNotFound(err) {
					// No answer about this record (the API server failed): nothing is
					// written, rather than a refusal of a record the runner may adopt. What
					// its spec names being gone (its broker deregistered) is an answer: no
					// one could write that spec now, and it is refused like a failed check.
					return AdoptAuthorshipResult{}, fmt.Errorf("%s %q: %w; nothing was adopted: run it again", strings.ToLower(kr.kind), rec.GetName(), err)
				}
				delete(adopted, rec.GetUID())
				out.Outcome, out.Detail = AuthorshipRefused, err.Error()
				break
			}
			v := auth.vouch(ctx, rec)
			out.Vouch = &v
			out.Outcome, out.Detail = AuthorshipAdopted, fmt.Sprintf("author %s, under the trust policy in force", id.Username)
			toWrite = append(toWrite, len(res.Records))
		}
		res.Records = append(res.Records, out)
	}
	if dryClient || len(toWrite) == 0 {
		return res, nil
	}
	if !server {
		vs := make([]Vouch, 0, len(toWrite))
		for _, i := range toWrite {
			vs = append(vs, *res.Records[i].Vouch)
		}
		if confirm == nil {
			return res, ErrNotConfirmed
		}
		if err := confirm(vs); err != nil {
			return res, err
		}
	}
	for _, i := range toWrite {
		out := &res.Records[i]
		if err := auth.restamp(writes(store.WithIntent(ctx)), recs[i].rec); err != nil {
			out.Outcome, out.Detail = AuthorshipRefused, "cannot write it: "+err.Error()
		}
	}
	return res, nil
}

// kindRecord is a record and its kind.
type kindRecord struct {
	kind string
	rec  v1alpha1.Record
}

// recordsOf lists the records of namespace ns: its brokers, instances and bindings.
func (auth *Authority) recordsOf(ctx context.Context, ns string) ([]kindRecord, error) {
	st := auth.env().Store
	var recs []kindRecord
	brokers, err := st.Brokers().List(ctx, ns, store.Filter{})
	if err != nil {
		return nil, err
	}
	for _, b := range brokers {
		recs = append(recs, kindRecord{v1alpha1.KindBroker, b})
	}
	insts, err := st.Instances().List(ctx, ns, store.Filter{})
	if err != nil {
		return nil, err
	}
	for _, i := range insts {
		recs = append(recs, kindRecord{v1alpha1.KindServiceInstance, i})
	}
	bindings, err := st.Bindings().List(ctx, ns, store.Filter{})
	if err != nil {
		return nil, err
	}
	for _, b := range bindings {
		recs = append(recs, kindRecord{v1alpha1.KindServiceBinding, b})
	}
	return recs, nil
}

// checkAuthorship refuses rec when the runner could not have written its spec: ctx is
// marked Adopting(rec), so every check asks the runner's own rights for it.
func (auth *Authority) checkAuthorship(ctx context.Context, rec v1alpha1.Record) error {
	secrets := auth.SecretsFor(rec)
	readAll := func(ns string, from []v1alpha1.ParametersFromSource) error {
		for _, pf := range from {
			if pf.SecretKeyRef != nil {
				if _, err := secrets(ctx, ns, pf.SecretKeyRef.Name); err != nil {
					return err
				}
			}
		}
		return nil
	}
	switch r := rec.(type) {
	case *v1alpha1.Broker:
		return auth.CheckBroker(ctx, r)
	case *v1alpha1.ServiceInstance:
		if err := readAll(r.Namespace, r.Spec.ParametersFrom); err != nil {
			return err
		}
		if len(r.Spec.SharedWith) > 0 {
			if err := auth.runnerMay(ctx, authorizationv1.ResourceAttributes{Namespace: r.Namespace, Verb: "update", Resource: "configmaps",
				Name: store.ConfigMapName(v1alpha1.KindServiceInstance, r.Name)}); err != nil {
				return err
			}
		}
		if r.DeletionTimestamp != nil {
			return nil
		}
		if up := r.Spec.UserProvided; up != nil {
			// No broker: what the spec sends anywhere is its credentials, the Secret its
			// record owns (written by the verb, perhaps not yet), copied into its
			// bindings' Secrets.
			return auth.Authorize(ctx, r, authorizationv1.ResourceAttributes{Namespace: r.Namespace, Verb: "get", Resource: "secrets", Name: up.CredentialsSecret})
		}
		t, planID, err := auth.env().InstanceTarget(ctx, r)
		if err != nil {
			return err
		}
		return auth.CheckPlan(ctx, r.Namespace, t, planID)
	case *v1alpha1.ServiceBinding:
		if err := readAll(r.Namespace, r.Spec.ParametersFrom); err != nil {
			return err
		}
		for _, tr := range r.Spec.SecretTransforms {
			if a := tr.AddKeysFrom; a != nil {
				if _, err := secrets(ctx, r.Namespace, a.SecretRef.Name); err != nil {
					return err
				}
			}
		}
		if err := auth.AuthorizeProjections(ctx, r); err != nil {
			return err
		}
		if r.DeletionTimestamp != nil {
			return nil
		}
		if inst, up, err := auth.userProvidedOf(ctx, r); err != nil || up {
			if err != nil {
				return err
			}
			if inst.Namespace != r.Namespace {
				// Another namespace's shared instance: its grant, as below.
				return auth.checkConsumerAdopted(ctx, r, inst)
			}
			// A copy of its own namespace's credentials Secret.
			return auth.Authorize(ctx, r, authorizationv1.ResourceAttributes{Namespace: r.Namespace, Verb: "get", Resource: "secrets", Name: inst.Spec.UserProvided.CredentialsSecret})
		}
		t, planID, err := auth.env().BindingTarget(ctx, r)
		if err != nil {
			return err
		}
		if err := auth.checkConsumerAdopted(ctx, r, t.TargetInstance()); err != nil {
			return err
		}
		return auth.CheckPlan(ctx, r.Namespace, t, planID)
	}
	return nil
}

// userProvidedOf reads the instance binding b names and reports whether it is
// user-provided (no broker: its bindings get a copy of its credentials Secret).
func (auth *Authority) userProvidedOf(ctx context.Context, b *v1alpha1.ServiceBinding) (*v1alpha1.ServiceInstance, bool, error) {
	ins, name := b.InstanceRef()
	inst, err := auth.env().Store.Instances().Get(ctx, ins, name)
	if store.IsNotFound(err) {
		return nil, false, nil // (what BindingTarget then says of it)
	}
	if err != nil {
		return nil, false, err
	}
	return inst, inst.IsUserProvided(), nil
}

// checkConsumerAdopted is CheckConsumer for a binding the runner adopts, as her bind of
// it would check it: a grant of another namespace's instance is its author's, and a
// runner who may not ask the API server what that author may do (a namespace's users
// may not create SubjectAccessReviews) leaves the grant to reconcile, which checks it at
// every step, as her bind does; the binding's namespace is still checked against her
// own rights. A grant that does not count (no grant, one whose author is not verified
// or may not write the instance's record) refuses it.
func (auth *Authority) checkConsumerAdopted(ctx context.Context, b *v1alpha1.ServiceBinding, inst *v1alpha1.ServiceInstance) error {
	var left bool
	err := auth.CheckConsumer(context.WithValue(WithRunnersRights(ctx), leftToReconcileKey{}, &left), b, inst)
	if err == nil || !left {
		return err
	}
	return auth.Authorize(ctx, b, authorizationv1.ResourceAttributes{Namespace: b.Namespace, Verb: "create", Resource: "configmaps"})
}

// leftToReconcileKey marks a context whose checks note (in the *bool it holds) a
// question about a record's author left to reconcile.
type leftToReconcileKey struct{}

// noteLeftToReconcile notes, in a context marked so, that a question was left to
// reconcile.
func noteLeftToReconcile(ctx context.Context) {
	if left, ok := ctx.Value(leftToReconcileKey{}).(*bool); ok {
		*left = true
	}
}

// restamp writes rec again as the runner's intent: the store stamps the runner as its
// author with the current token; the spec is written as it was read. A refusal's backoff
// is cut short: the next reconcile looks at the record again at once, now that its
// author can be verified.
func (auth *Authority) restamp(ctx context.Context, rec v1alpha1.Record) error {
	now := metav1.NewTime(auth.env().Now())
	due := func(s *v1alpha1.OperationStatus) {
		if s.Retry != nil && s.Retry.NextRetryAt != nil && s.Retry.NextRetryAt.After(now.Time) {
			s.Retry.NextRetryAt = &now
		}
	}
	var err error
	switch r := rec.(type) {
	case *v1alpha1.Broker:
		_, err = auth.env().Store.Brokers().Update(ctx, r)
	case *v1alpha1.ServiceInstance:
		due(&r.Status.OperationStatus)
		_, err = auth.env().Store.Instances().Update(ctx, r)
	case *v1alpha1.ServiceBinding:
		due(&r.Status.OperationStatus)
		_, err = auth.env().Store.Bindings().Update(ctx, r)
	}
	return err
}
