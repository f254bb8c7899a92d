package authority

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// basis is on whose authority the engine acts for a record.
type basis struct {
	// self: the user running the engine wrote the spec (in this process, or as its
	// verified author); their own permissions apply, enforced by the API server.
	self bool
	// author is the verified author, when not self.
	author store.Author
	// unverified says why the author cannot be believed; "" when self or verified.
	unverified string
	// notRunners: the user running the engine may not lend the record their own rights
	// (WithRunnersRights) where the author's cannot be checked: see runnersRightsBarred.
	notRunners bool
	// transient: unverified only because the trust policy could not be read.
	transient bool
}

// of says on whose authority the engine may act for rec.
func (auth *Authority) of(ctx context.Context, rec v1alpha1.Record) basis {
	if auth.env().Store.Intended(rec) || isDraft(ctx, rec) {
		return basis{self: true}
	}
	au := store.AuthorOf(rec)
	kind := strings.ToLower(rec.GetObjectKind().GroupVersionKind().Kind)
	if kind == "" {
		kind = "record"
	}
	state := auth.State(ctx)
	barred := runnersRightsBarred(rec, state)
	switch {
	case Tampered(rec) != "":
		return basis{unverified: fmt.Sprintf("%s %q %s", kind, rec.GetName(), Tampered(rec)), notRunners: barred}
	case au.Username == "":
		return basis{unverified: fmt.Sprintf("%s %q names no author (it was not written by kubectl catalog with the trust policy in force)", kind, rec.GetName()), notRunners: barred}
	case state.Token == "":
		return basis{unverified: fmt.Sprintf("the catalog's trust policy is not in force (%s), so the author of %s %q cannot be verified: an administrator runs \"kubectl catalog init\"", state.Reason, kind, rec.GetName()), notRunners: barred,
			transient: state.unreadable}
	case au.Token != state.Token:
		return basis{unverified: fmt.Sprintf("the spec of %s %q was not written under the trust policy now in force: its owner makes the namespace's records hers with \"kubectl catalog adopt -n %s\", which checks each against her rights and shows what each sends where (which Secret to which URL) before she vouches for it", kind, rec.GetName(), rec.GetNamespace()), notRunners: barred}
	}
	if id, err := auth.env().Platform.Identity(ctx); err == nil && id != nil && id.Username == au.Username {
		return basis{self: true}
	}
	return basis{author: au, notRunners: barred}
}

type draftKey struct{}

// AsDraft marks ctx as checking rec before this process records it as the user's intent
// (a verb's record, created with store.WithIntent): rec is the runner's own, as it is once
// written (Store.Intended). It has no uid and no author yet; judged by its authorship it
// would be a record nobody vouches for, which another person may have written.
func AsDraft(ctx context.Context, rec v1alpha1.Record) context.Context {
	return context.WithValue(ctx, draftKey{}, rec)
}

// isDraft reports whether rec is the record ctx checks before it is recorded (AsDraft):
// that very object, never stored (a record read from the cluster has a uid).
func isDraft(ctx context.Context, rec v1alpha1.Record) bool {
	d, _ := ctx.Value(draftKey{}).(v1alpha1.Record)
	return d != nil && rec.GetUID() == "" && d == rec
}

// Tampered says how rec differs from every record kubectl catalog writes in a way only
// a change by someone other than its author explains, or "": author annotations without
// the managed-by label. The store writes both, and the trust policy keeps the label on;
// a label dropped before the policy was in force (or under a policy that selected
// records by it) took the record out of the policy's sight.
func Tampered(rec v1alpha1.Record) string {
	if rec.GetLabels()[store.LabelManagedBy] == store.ManagedBy {
		return ""
	}
	a := rec.GetAnnotations()
	for _, k := range []string{store.AnnotationAuthor, store.AnnotationAuthorGroups, store.AnnotationTrustToken} {
		if a[k] != "" {
			return fmt.Sprintf("carries author annotations but lacks the label %s=%s that kubectl catalog writes with them: someone other than its author changed it; its owner deletes it and writes it again with kubectl catalog",
				store.LabelManagedBy, store.ManagedBy)
		}
	}
	return ""
}

// runnersRightsBarred reports whether the user running the engine must not act on rec
// with their own rights (WithRunnersRights) where its author's cannot be checked: when
// another person may have written it. With the trust policy in force that is any record
// that is not the runner's own (intended, about to be recorded by this process, or
// verified as theirs): an unverified record
// was written before the policy, by anyone, and a verified one by its author. A tampered
// record is barred whatever the policy. Lending the runner's rights there would lend
// them to the record's writer: a broker credentials Secret the runner may read, sent to
// a URL the writer chose.
func runnersRightsBarred(rec v1alpha1.Record, state TrustState) bool {
	return state.Token != "" || Tampered(rec) != ""
}

type runnersRightsKey struct{}

// WithRunnersRights marks ctx as a run on the user's own command (a verb, or a reconcile
// run by hand with --trust-namespace-writers): where a record's author cannot be
// verified (no trust policy) or the user may not ask the API server about them, the
// engine acts with the user's own rights, as the user could by hand, instead of
// refusing. A verified author the API server says may not do something is refused all
// the same. Reconcile in the cluster never runs so.
func WithRunnersRights(ctx context.Context) context.Context {
	return context.WithValue(ctx, runnersRightsKey{}, true)
}

// runnersRights reports whether ctx lends the user running the engine's rights to rec:
// every record (WithRunnersRights), or the records a person agreed to
// (WithRunnersRightsFor).
func runnersRights(ctx context.Context, rec v1alpha1.Record) bool {
	if v, _ := ctx.Value(runnersRightsKey{}).(bool); v {
		return true
	}
	uids, _ := ctx.Value(runnersRightsForKey{}).(map[types.UID]bool)
	return rec.GetUID() != "" && uids[rec.GetUID()]
}

type runnersRightsForKey struct{}

// WithRunnersRightsFor is WithRunnersRights for the records of us only: those a person
// running reconcile by hand was shown (Unvouched), and agreed to act on with their own
// rights. Any other record whose author cannot be verified is refused as without it.
func WithRunnersRightsFor(ctx context.Context, us []Unvouched) context.Context {
	uids := map[types.UID]bool{}
	for _, u := range us {
		for _, uid := range u.uids {
			uids[uid] = true
		}
	}
	return context.WithValue(ctx, runnersRightsForKey{}, uids)
}

type reconcileKey struct{}

// AsReconcile marks ctx as a reconcile run's: nobody else takes up what it may not do,
// so a call it lacks a permission for is a failure with backoff that names the
// permission to grant, never a call left to reconcile.
func AsReconcile(ctx context.Context) context.Context {
	return context.WithValue(ctx, reconcileKey{}, true)
}

func IsReconcile(ctx context.Context) bool { v, _ := ctx.Value(reconcileKey{}).(bool); return v }

type adoptingKey struct{}

// Adopting marks ctx as checking whether the runner could have written the records of
// uids (the one checked, and those adopted before it in the same run): what needs their
// author's authority is asked of the runner's own rights (a SelfSubjectAccessReview),
// exactly as if the runner wrote their spec with a verb; every other record keeps its own
// authority (an instance's grant to share stays its author's).
func Adopting(ctx context.Context, uids map[types.UID]bool) context.Context {
	return context.WithValue(ctx, adoptingKey{}, uids)
}

func adoptingUID(ctx context.Context, uid types.UID) bool {
	v, _ := ctx.Value(adoptingKey{}).(map[types.UID]bool)
	return uid != "" && v[uid]
}

// OriginatingIdentity is the user a call about rec is made for, sent to the broker as the
// originating identity (nil sends none). A verb's calls are its user's. An unattended
// engine (reconcile) calls for the record's author when the author is verified (see
// of): a broker that authorizes by the header must never see reconcile's own
// identity, which may hold rights no tenant has, for a request a tenant wrote. A record
// whose author cannot be verified while the trust policy is in force is called for no
// one; without the policy, where no author can be verified and reconcile acts with its
// own rights, reconcile's identity is sent.
func (auth *Authority) OriginatingIdentity(ctx context.Context, rec v1alpha1.Record) (*osb.OriginatingIdentity, error) {
	if !auth.env().Unattended {
		return auth.env().Platform.Identity(ctx)
	}
	a := auth.of(ctx, rec)
	switch {
	case a.self, a.unverified != "" && !a.notRunners:
		return auth.env().Platform.Identity(ctx)
	case a.unverified != "":
		return nil, nil
	}
	return &osb.OriginatingIdentity{Username: a.author.Username, Groups: slices.Clone(a.author.Groups), Extra: map[string][]string{}}, nil
}
