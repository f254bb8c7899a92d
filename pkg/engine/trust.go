package engine

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// This file holds what keeps a record, which anyone allowed to write ConfigMaps in its
// namespace can forge, from making the engine act with more authority than the record's
// author had (docs/security.md):
//
//   - references stay in the record's namespace (the one exception: a cluster-scoped
//     broker's credentials, in the catalog namespace, which only administrators write);
//     cluster-scoped brokers and classes are read from the catalog namespace only;
//   - a Secret is read, and a workload changed, in the author's name only: when this
//     process wrote the spec itself on the user's command (or is about to: a verb's
//     checks before it records it), when the author is the user running the engine, or
//     when the API server says the author may (SubjectAccessReview).
//     The author is believed only when the catalog's trust policy is in force, which
//     makes the API server refuse a spec written under another user's name;
//   - catalog access rules and the broker's catalog are enforced before a provision, a
//     plan change or a bind;
//   - an OSB id is never sent for a record when an older record already uses it.
//
// A refused record is never skipped silently: its status carries a Refused condition
// saying why, and no broker is called for it.

// TrustState says whether the catalog's trust policy is in force.
type TrustState struct {
	// Token is the current trust token; empty when the policy is not in force.
	Token string
	// Reason says why the policy is not in force (or how it was checked).
	Reason string
	// unreadable: the state could not be read; reading it again may find it in force.
	unreadable bool
}

// TrustSource reads the state of the trust policy (pkg/trust reads it from the cluster).
type TrustSource interface {
	TrustState(ctx context.Context) (TrustState, error)
}

// Authorizer answers whether a user may make an API request (a SubjectAccessReview).
type Authorizer interface {
	Allowed(ctx context.Context, user string, groups []string, attrs authorizationv1.ResourceAttributes) (bool, string, error)
}

// KubeAuthorizer is the Authorizer of a real cluster.
type KubeAuthorizer struct{ Core kubernetes.Interface }

// Allowed asks the API server with a SubjectAccessReview.
func (a KubeAuthorizer) Allowed(ctx context.Context, user string, groups []string, attrs authorizationv1.ResourceAttributes) (bool, string, error) {
	r, err := a.Core.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &attrs},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("cannot ask the API server what %q may do (SubjectAccessReview): %w", user, err)
	}
	return r.Status.Allowed, r.Status.Reason, nil
}

// Reasons of refusals. They name no action: a refusal holds back whatever is due.
const (
	// ReasonRefusedUntrustedReference: the record (or its broker) refers to something
	// outside its namespace, or to a cluster-scoped broker or class outside the catalog
	// namespace.
	ReasonRefusedUntrustedReference = "RefusedUntrustedReference"
	// ReasonRefusedAuthorUnverified: what is due needs the author's authority, and the
	// record's author cannot be verified.
	ReasonRefusedAuthorUnverified = "RefusedAuthorUnverified"
	// ReasonRefusedNotAuthorized: the record's author may not read a Secret or change a
	// workload the record names.
	ReasonRefusedNotAuthorized = "RefusedNotAuthorized"
	// ReasonRefusedPlanNotAllowed: access rules, or the broker's catalog as synced, do
	// not offer the plan in the record's namespace.
	ReasonRefusedPlanNotAllowed = "RefusedPlanNotAllowed"
	// ReasonRefusedIDInUse: an older record already uses the record's OSB id.
	ReasonRefusedIDInUse = "RefusedIDInUse"
	// ReasonRefusedIDNotOwned: an OSB id the record's status names is not the record's
	// (see v1alpha1.ServiceInstance.OwnsExternalID).
	ReasonRefusedIDNotOwned = "RefusedIDNotOwned"
)

// RefusedError says why the engine will not act on a record.
type RefusedError struct {
	Reason  string
	Message string
	// Transient: the refusal comes of a request that failed (the trust policy, or the
	// API server's answer about the author, could not be read) and may go through when
	// tried again. Any other refusal stays until a person changes something: a spec, a
	// grant, a role, the trust policy, or the records' author ("adopt").
	Transient bool
}

func (e *RefusedError) Error() string { return e.Message }

// NeedsPerson reports whether only a person can lift the refusal: trying again, after
// any backoff, meets it again until someone changes what its message names. A verb's
// --wait ends at it (see Result.NeedsPerson).
func (e *RefusedError) NeedsPerson() bool { return !e.Transient }

// RefusalReason is the refusal's reason, for packages that record it without importing
// this one.
func (e *RefusedError) RefusalReason() string { return e.Reason }

func refused(reason, format string, args ...any) error {
	return &RefusedError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// commandIn finds the commands a message names, in double quotes.
var commandIn = regexp.MustCompile(`"(kubectl catalog [^"]+)"`)

// RefusalFix is the one command that resolves a refusal with reason and message (a
// record's Refused condition), for a record of namespace: the first command the message
// names, else the one of its reason (an unverified author, or one who may not: someone
// who may makes the namespace's records theirs with "kubectl catalog adopt", which checks
// each against their own rights). It is "" when the message says in words what to change
// (the spec, a grant).
func RefusalFix(reason, message, namespace string) string {
	if m := commandIn.FindStringSubmatch(message); m != nil {
		return m[1]
	}
	switch reason {
	case ReasonRefusedAuthorUnverified, ReasonRefusedNotAuthorized:
		return "kubectl catalog adopt -n " + namespace
	}
	return ""
}

// AsRefused returns the refusal err carries, if any.
func AsRefused(err error) (*RefusedError, bool) {
	var r *RefusedError
	ok := errors.As(err, &r)
	return r, ok
}

// authority is on whose authority the engine acts for a record.
type authority struct {
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

// trustCache keeps the trust state and answers of the Authorizer for a short while:
// reconcile asks the same questions for many records.
type trustCache struct {
	mu      sync.Mutex
	state   TrustState
	stateAt time.Time
	answers map[string]cachedAnswer
	// owned holds ids checked to belong to a record (kind/id -> uid): an older record
	// cannot appear later, so the answer stays true.
	owned map[string]string
	// ids is the id labels of the records reconcile listed last (UseIDIndex).
	ids *store.IDIndex
}

type cachedAnswer struct {
	allowed bool
	reason  string
	at      time.Time
}

const trustCacheTTL = 10 * time.Second

func (e *Engine) trustState(ctx context.Context) TrustState {
	c := &e.trust
	c.mu.Lock()
	if !c.stateAt.IsZero() && time.Since(c.stateAt) < trustCacheTTL {
		s := c.state
		c.mu.Unlock()
		return s
	}
	c.mu.Unlock()
	s := TrustState{Reason: "no trust policy source is configured"}
	if e.cfg.Trust != nil {
		var err error
		if s, err = e.cfg.Trust.TrustState(ctx); err != nil {
			s = TrustState{Reason: "the trust policy could not be read: " + err.Error(), unreadable: true}
		}
	}
	c.mu.Lock()
	c.state, c.stateAt = s, time.Now()
	c.mu.Unlock()
	return s
}

// authorityOf says on whose authority the engine may act for rec.
func (e *Engine) authorityOf(ctx context.Context, rec v1alpha1.Record) authority {
	if e.cfg.Store.Intended(rec) || isDraft(ctx, rec) {
		return authority{self: true}
	}
	au := store.AuthorOf(rec)
	kind := strings.ToLower(rec.GetObjectKind().GroupVersionKind().Kind)
	if kind == "" {
		kind = "record"
	}
	state := e.trustState(ctx)
	barred := runnersRightsBarred(rec, state)
	switch {
	case tampered(rec) != "":
		return authority{unverified: fmt.Sprintf("%s %q %s", kind, rec.GetName(), tampered(rec)), notRunners: barred}
	case au.Username == "":
		return authority{unverified: fmt.Sprintf("%s %q names no author (it was not written by kubectl catalog with the trust policy in force)", kind, rec.GetName()), notRunners: barred}
	case state.Token == "":
		return authority{unverified: fmt.Sprintf("the catalog's trust policy is not in force (%s), so the author of %s %q cannot be verified: an administrator runs \"kubectl catalog init\"", state.Reason, kind, rec.GetName()), notRunners: barred,
			transient: state.unreadable}
	case au.Token != state.Token:
		return authority{unverified: fmt.Sprintf("the spec of %s %q was not written under the trust policy now in force: its owner makes the namespace's records hers with \"kubectl catalog adopt -n %s\", which checks each against her rights", kind, rec.GetName(), rec.GetNamespace()), notRunners: barred}
	}
	if id, err := e.cfg.Platform.Identity(ctx); err == nil && id != nil && id.Username == au.Username {
		return authority{self: true}
	}
	return authority{author: au, notRunners: barred}
}

type draftKey struct{}

// asDraft marks ctx as checking rec before this process records it as the user's intent
// (a verb's record, created with store.WithIntent): rec is the runner's own, as it is once
// written (Store.Intended). It has no uid and no author yet; judged by its authorship it
// would be a record nobody vouches for, which another person may have written.
func asDraft(ctx context.Context, rec v1alpha1.Record) context.Context {
	return context.WithValue(ctx, draftKey{}, rec)
}

// isDraft reports whether rec is the record ctx checks before it is recorded (asDraft):
// that very object, never stored (a record read from the cluster has a uid).
func isDraft(ctx context.Context, rec v1alpha1.Record) bool {
	d, _ := ctx.Value(draftKey{}).(v1alpha1.Record)
	return d != nil && rec.GetUID() == "" && d == rec
}

// tampered says how rec differs from every record kubectl catalog writes in a way only
// a change by someone other than its author explains, or "": author annotations without
// the managed-by label. The store writes both, and the trust policy keeps the label on;
// a label dropped before the policy was in force (or under a policy that selected
// records by it) took the record out of the policy's sight.
func tampered(rec v1alpha1.Record) string {
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
	return state.Token != "" || tampered(rec) != ""
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

// NoVoucher ends the message of a refusal for want of a verified author where the user
// running the engine could lend the record their own rights: it names no command, since
// a verb and reconcile show it alike (reconcile adds the flag that does it).
const NoVoucher = "no one vouches for its author: only a person who trusts everyone who may write ConfigMaps there acts on it with their own rights, in namespace"

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

// TrustPolicyInForce reports whether the catalog's trust policy is in force: records'
// authors can be verified, and no record is ever lent the rights of the user running
// reconcile (Unvouched lists none).
func (e *Engine) TrustPolicyInForce(ctx context.Context) bool {
	return e.trustState(ctx).Token != ""
}

// lendable reports whether the engine would act on rec with the runner's rights under
// WithRunnersRights where without it it refuses: rec's author cannot be verified, and
// no other person may have written it behind the runner's back (runnersRightsBarred).
func (e *Engine) lendable(ctx context.Context, rec v1alpha1.Record) bool {
	a := e.authorityOf(ctx, rec)
	return !a.self && a.unverified != "" && !a.notRunners
}

// UnvouchedRecord says what acting on rec, a record with work pending, with the rights
// of the user running reconcile would lend those rights for (see Unvouched); nil when
// nothing: the trust policy is in force (the runner's rights are never lent then), its
// author is the runner, or its next step needs no author's authority. Only records of
// rec's own namespace are looked at: a binding's instance or broker in another namespace
// is never lent the runner's rights this way.
func (e *Engine) UnvouchedRecord(ctx context.Context, rec v1alpha1.Record) (*Unvouched, error) {
	if e.TrustPolicyInForce(ctx) {
		return nil, nil
	}
	u := &Unvouched{Namespace: rec.GetNamespace(), Name: rec.GetName()}
	own := e.lendable(ctx, rec)
	// lend lists line, lent for the records rs.
	lend := func(line string, rs ...v1alpha1.Record) {
		if !slices.Contains(u.Lends, line) {
			u.Lends = append(u.Lends, line)
		}
		for _, r := range rs {
			if !slices.Contains(u.uids, r.GetUID()) {
				u.uids = append(u.uids, r.GetUID())
			}
		}
	}
	deleting := rec.GetDeletionTimestamp() != nil
	// through lends what a call through the broker of inst needs: its credentials, and
	// (with from) the parameters Secrets of rec sent to it.
	through := func(inst *v1alpha1.ServiceInstance, from []v1alpha1.ParametersFromSource) error {
		if inst.IsUserProvided() {
			return nil
		}
		ns := e.brokerNamespace(inst)
		if ns != rec.GetNamespace() {
			// A cluster broker: its credentials are the administrators'; parameters read
			// in rec's author's name.
			if own && !deleting {
				for _, s := range secretsOf(from) {
					lend(fmt.Sprintf("Secret %q (parameters) goes to cluster broker %q", s, inst.Spec.BrokerName), rec)
				}
			}
			return nil
		}
		b, err := e.cfg.Store.Brokers().Get(ctx, ns, inst.Spec.BrokerName)
		if store.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if a := b.Spec.Auth; a != nil && e.lendable(ctx, b) {
			lend(fmt.Sprintf("Secret %q (credentials of broker %q) goes to %s", a.SecretRef.Name, b.Name, b.Spec.URL), b)
		}
		if own && !deleting {
			// Parameters from Secrets go to a namespace broker only if its author, too,
			// may read them (checkParametersTo).
			rs := []v1alpha1.Record{rec}
			if e.lendable(ctx, b) {
				rs = append(rs, b)
			}
			for _, s := range secretsOf(from) {
				lend(fmt.Sprintf("Secret %q (parameters) goes to %s (broker %q)", s, b.Spec.URL, b.Name), rs...)
			}
		}
		return nil
	}
	var err error
	switch r := rec.(type) {
	case *v1alpha1.Broker:
		u.Kind = v1alpha1.KindBroker
		if a := r.Spec.Auth; a != nil && own && r.Namespace != e.cfg.CatalogNamespace {
			lend(fmt.Sprintf("Secret %q (its credentials) goes to %s", a.SecretRef.Name, r.Spec.URL), r)
		}
	case *v1alpha1.ServiceInstance:
		u.Kind = v1alpha1.KindServiceInstance
		err = through(r, r.Spec.ParametersFrom)
	case *v1alpha1.ServiceBinding:
		u.Kind = v1alpha1.KindServiceBinding
		ins, name := r.InstanceRef()
		if ins != r.Namespace {
			break
		}
		inst, gerr := e.cfg.Store.Instances().Get(ctx, ins, name)
		if store.IsNotFound(gerr) {
			break
		}
		if gerr != nil {
			return nil, gerr
		}
		if err = through(inst, r.Spec.ParametersFrom); err != nil || deleting || !own {
			break
		}
		if up := inst.Spec.UserProvided; up != nil {
			rs := []v1alpha1.Record{r}
			if e.lendable(ctx, inst) {
				rs = append(rs, inst)
			}
			lend(fmt.Sprintf("Secret %q (credentials of user-provided instance %q) is copied into Secret %q", up.CredentialsSecret, inst.Name, r.Spec.SecretName), rs...)
		}
		for _, tr := range r.Spec.SecretTransforms {
			if a := tr.AddKeysFrom; a != nil {
				lend(fmt.Sprintf("Secret %q is copied into Secret %q", a.SecretRef.Name, r.Spec.SecretName), r)
			}
		}
		for _, p := range r.Spec.Projections {
			lend(fmt.Sprintf("%s %q is changed to mount Secret %q", p.Kind, p.Name, r.Spec.SecretName), r)
		}
	}
	if err != nil {
		return nil, err
	}
	if len(u.Lends) == 0 {
		return nil, nil
	}
	return u, nil
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

type reconcileKey struct{}

// AsReconcile marks ctx as a reconcile run's: nobody else takes up what it may not do,
// so a call it lacks a permission for is a failure with backoff that names the
// permission to grant, never a call left to reconcile.
func AsReconcile(ctx context.Context) context.Context {
	return context.WithValue(ctx, reconcileKey{}, true)
}

func isReconcile(ctx context.Context) bool { v, _ := ctx.Value(reconcileKey{}).(bool); return v }

// authorize refuses a request the engine would make in the name of rec's author unless
// the author may make it.
func (e *Engine) authorize(ctx context.Context, rec v1alpha1.Record, attrs authorizationv1.ResourceAttributes) error {
	if adoptingUID(ctx, rec.GetUID()) {
		// The runner adopts rec: the spec counts as theirs only if they could write it.
		return e.runnerMay(ctx, attrs)
	}
	a := e.authorityOf(ctx, rec)
	if a.self {
		return nil
	}
	what := describeRequest(attrs)
	runners := runnersRights(ctx, rec) && !a.notRunners
	if a.unverified != "" {
		if runners {
			return nil
		}
		var err error
		if a.notRunners {
			err = refused(ReasonRefusedAuthorUnverified, "refused to %s on the record's behalf: %s (another person may have written it, so your own rights are not lent to it)", what, a.unverified)
		} else {
			err = refused(ReasonRefusedAuthorUnverified, "refused to %s on the record's behalf: %s (%s %q)",
				what, a.unverified, NoVoucher, rec.GetNamespace())
		}
		err.(*RefusedError).Transient = a.transient
		return err
	}
	if e.cfg.Authorizer == nil {
		if runners {
			return nil
		}
		return refused(ReasonRefusedAuthorUnverified, "refused to %s on behalf of %q: this engine cannot ask the API server what the author may do", what, a.author.Username)
	}
	key := strings.Join([]string{a.author.Username, strings.Join(a.author.Groups, ","), attrs.Verb, attrs.Group, attrs.Resource, attrs.Namespace, attrs.Name}, "\x00")
	c := &e.trust
	c.mu.Lock()
	ans, ok := c.answers[key]
	c.mu.Unlock()
	if !ok || time.Since(ans.at) > trustCacheTTL {
		allowed, reason, err := e.cfg.Authorizer.Allowed(ctx, a.author.Username, a.author.Groups, attrs)
		if err != nil && runners {
			return nil
		}
		if err != nil && !runners && runnersRights(ctx, rec) && !isReconcile(ctx) {
			// The user's own command, on a record another person wrote, and the user may not
			// ask the API server about that person: reconcile, which may, decides.
			return &LeftToReconcileError{What: fmt.Sprintf("you may not ask the API server whether %q, who wrote record %s/%s, may %s, so reconcile, which may, decides and sends what is due (the installed CronJob or \"kubectl catalog reconcile\" run by an administrator)",
				a.author.Username, rec.GetNamespace(), rec.GetName(), what), Err: err}
		}
		if err != nil {
			r := refused(ReasonRefusedAuthorUnverified, "refused to %s on behalf of %q: %v", what, a.author.Username, err)
			r.(*RefusedError).Transient = true
			return r
		}
		ans = cachedAnswer{allowed: allowed, reason: reason, at: time.Now()}
		c.mu.Lock()
		if c.answers == nil || len(c.answers) > 10000 {
			c.answers = map[string]cachedAnswer{}
		}
		c.answers[key] = ans
		c.mu.Unlock()
	}
	if !ans.allowed {
		if rec.GetDeletionTimestamp() != nil {
			// Typically a namespace being deleted, whose RoleBindings went first: the
			// author's rights are gone, and only someone who has them finishes it.
			return refused(ReasonRefusedNotAuthorized, "refused to %s: the record's author %q may not (%s); it is being deleted: someone who may do it (an administrator) makes it theirs with \"kubectl catalog adopt -n %s\", which checks it against their own rights, then runs \"kubectl catalog reconcile -n %s\"",
				what, a.author.Username, authzReason(ans.reason), rec.GetNamespace(), rec.GetNamespace())
		}
		return refused(ReasonRefusedNotAuthorized, "refused to %s: the record's author %q may not (%s)", what, a.author.Username, authzReason(ans.reason))
	}
	return nil
}

func authzReason(r string) string {
	if r == "" {
		return "no RBAC rule allows it"
	}
	return r
}

func describeRequest(a authorizationv1.ResourceAttributes) string {
	res := a.Resource
	switch {
	case a.Resource == "secrets":
		res = "Secret"
	case a.Group != "":
		res = a.Resource + "." + a.Group
	}
	return fmt.Sprintf("%s %s %q in namespace %q", a.Verb, res, a.Name, a.Namespace)
}

// secretsFor reads Secrets named by rec, in rec's namespace only and in its author's
// name.
func (e *Engine) secretsFor(rec v1alpha1.Record) SecretReader {
	return func(ctx context.Context, ns, name string) (map[string][]byte, error) {
		if ns != rec.GetNamespace() {
			return nil, refused(ReasonRefusedUntrustedReference, "refused to read Secret %q in namespace %q: a record may only name Secrets of its own namespace %q", name, ns, rec.GetNamespace())
		}
		if err := e.authorize(ctx, rec, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets", Name: name}); err != nil {
			return nil, err
		}
		s, err := e.cfg.Store.GetSecret(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		return s.Data, nil
	}
}

// checkBroker refuses a broker record the engine must not use: a cluster-scoped broker
// outside the catalog namespace, a reference out of the broker's namespace, or
// credentials its author may not read (the catalog namespace, which only administrators
// write, is trusted as it is).
func (e *Engine) checkBroker(ctx context.Context, b *v1alpha1.Broker) error {
	if b.Spec.Scope == v1alpha1.ScopeCluster && b.Namespace != e.cfg.CatalogNamespace {
		return refused(ReasonRefusedUntrustedReference, "broker %q in namespace %q says it is cluster-scoped, but cluster-scoped brokers live only in the catalog namespace %q: it is ignored", b.Name, b.Namespace, e.cfg.CatalogNamespace)
	}
	a := b.Spec.Auth
	if a == nil {
		return nil
	}
	if ns := a.SecretRef.Namespace; ns != "" && ns != b.Namespace {
		return refused(ReasonRefusedUntrustedReference, "broker %q names credentials in namespace %q: a broker's credentials must be in its own namespace %q", b.Name, ns, b.Namespace)
	}
	if b.Namespace == e.cfg.CatalogNamespace {
		return nil
	}
	if err := e.authorize(ctx, b, authorizationv1.ResourceAttributes{Namespace: b.Namespace, Verb: "get", Resource: "secrets", Name: a.SecretRef.Name}); err != nil {
		r, ok := AsRefused(err)
		if !ok {
			return err
		}
		return &RefusedError{Reason: r.Reason, Message: fmt.Sprintf("broker %q: %s", b.Name, r.Message), Transient: r.Transient}
	}
	return nil
}

// CheckBroker refuses a broker record reconcile must not use (see checkBroker): it is
// what reconcile asks before it fetches a broker's catalog.
func (e *Engine) CheckBroker(ctx context.Context, b *v1alpha1.Broker) error {
	return e.checkBroker(ctx, b)
}

// checkPlan refuses a provision, plan change or bind in namespace ns of a plan that the
// broker's catalog as synced does not offer, or that access rules disable there.
func (e *Engine) checkPlan(ctx context.Context, ns string, t target, planID string) error {
	if t.class == nil {
		return refused(ReasonRefusedPlanNotAllowed, "broker %q offers no class with the record's id (its class record is missing): sync the broker, or deprovision", t.broker.Name)
	}
	p := t.class.PlanByID(planID)
	if p == nil {
		return refused(ReasonRefusedPlanNotAllowed, "class %q of broker %q has no plan with id %q", t.class.Spec.ExternalName, t.broker.Name, planID)
	}
	rules, ok := e.prepared.accessRules(e.cfg.CatalogNamespace)
	if !ok {
		var err error
		if rules, err = marketplace.LoadRules(ctx, e.cfg.Store, marketplace.InCatalogNamespace(e.cfg.CatalogNamespace)); err != nil {
			return err
		}
	}
	if !rules.PlanVisible(ns, t.class, planID) {
		return refused(ReasonRefusedPlanNotAllowed, "plan %q of class %q is not available in namespace %q (catalog access rules): an administrator enables it with \"kubectl catalog access enable %s/%s -n %s\"",
			p.ExternalName, t.class.Spec.ExternalName, ns, t.class.Spec.ExternalName, p.ExternalName, ns)
	}
	return nil
}

// checkID refuses to send OSB id for rec (of kind, an instance or a binding) when the id
// is not rec's (checkOwnID), or when another record, in any namespace, already uses it:
// an older record for an id bound to rec's namespace, the record that claimed it first
// for an id bound to nothing (checkAdoptedID). Ids show up in describe output,
// dashboards and logs, and copying one into a record must not make the engine act on
// someone else's instance or binding with the broker's credentials.
func (e *Engine) checkID(ctx context.Context, kind string, rec idOwner, id string) error {
	if err := checkOwnID(kind, rec, id); err != nil {
		return err
	}
	key := kind + "/" + id
	c := &e.trust
	c.mu.Lock()
	owner, ok := c.owned[key]
	c.mu.Unlock()
	if ok && owner == string(rec.GetUID()) {
		return nil
	}
	if !v1alpha1.IsBoundID(id) {
		return e.checkAdoptedID(ctx, kind, rec, id)
	}
	created := rec.GetCreationTimestamp()
	older := func(users []store.IDUser) *store.IDUser {
		for _, u := range users {
			if u.UID != rec.GetUID() && !created.Time.Before(u.Created.Time) {
				return &u
			}
		}
		return nil
	}
	c.mu.Lock()
	ids := c.ids
	c.mu.Unlock()
	// The index of reconcile's list answers without a list of its own (one per record,
	// each filtering every ConfigMap of the cluster at the API server) when it can; a
	// refusal is never made on it alone, since the older record may be gone by now.
	users, ok := ids.Lookup(kind, "", id, rec.GetUID())
	if !ok || older(users) != nil {
		var err error
		if users, err = e.idUsers(ctx, kind, rec.GetNamespace(), id); err != nil {
			return err
		}
	}
	u, err := e.olderHolder(ctx, kind, rec, id, users)
	if err != nil {
		return err
	}
	if u != nil {
		return refused(ReasonRefusedIDInUse, "refused to send OSB id %s: %s %q in namespace %q, created before this record, already uses it", id, strings.ToLower(kind), u.Name, u.Namespace)
	}
	e.noteOwnID(kind, rec, id)
	return nil
}

// noteOwnID remembers that the check of OSB id found it rec's, so that the checks of
// rec's later calls in this process need no list.
func (e *Engine) noteOwnID(kind string, rec metav1.Object, id string) {
	c := &e.trust
	c.mu.Lock()
	if c.owned == nil || len(c.owned) > 100000 {
		c.owned = map[string]string{}
	}
	c.owned[kind+"/"+id] = string(rec.GetUID())
	c.mu.Unlock()
}

// idUsers lists the records of kind, in every namespace, that use OSB id id (the list
// ctx carries, if any: see withIDListsAhead); for a user who may not list records of
// every namespace, those of namespace, which they may see.
func (e *Engine) idUsers(ctx context.Context, kind, namespace, id string) ([]store.IDUser, error) {
	list, ok := takeIDList(ctx, kind, id)
	if !ok {
		list = ahead.Done(e.cfg.Store.WithExternalID(ctx, kind, "", id))
	}
	users, err := list.Wait()
	if store.IsForbidden(err) {
		users, err = e.cfg.Store.WithExternalID(ctx, kind, namespace, id)
	}
	return users, err
}

// UseIDIndex makes the check that no older record uses an OSB id answer from idx, the id
// labels of the records reconcile has just listed (store.ListPendingWithIDs), where idx
// can answer: for records it listed, created before the newest record it listed. It
// replaces the index given before; nil stops using one.
func (e *Engine) UseIDIndex(idx *store.IDIndex) {
	e.trust.mu.Lock()
	e.trust.ids = idx
	e.trust.mu.Unlock()
}

// vetInstanceCall refuses a call about inst with OSB id id that the engine must not make:
// an id an older record uses, or (planID set, for a provision or a plan change) a plan
// the namespace may not use.
func (e *Engine) vetInstanceCall(ctx context.Context, inst *v1alpha1.ServiceInstance, t target, id, planID string) error {
	if err := e.checkID(ctx, v1alpha1.KindServiceInstance, inst, id); err != nil {
		return err
	}
	if planID != "" {
		return e.checkPlan(ctx, inst.Namespace, t, planID)
	}
	return nil
}

// vetBindingCall refuses a call about b that the engine must not make: an instance or
// binding id an older record uses and, for a bind, a plan the namespace may not use or a
// transform reading a Secret the binding's author may not read.
//
// The two id checks read independently and go out together; the instance's refusal
// (or error) is the one returned when both fail, as when they ran in turn.
func (e *Engine) vetBindingCall(ctx context.Context, b *v1alpha1.ServiceBinding, t bindTarget, op *v1alpha1.Operation, bind bool) error {
	bindingID := ahead.Start(ctx, func() (struct{}, error) {
		return struct{}{}, e.checkID(ctx, v1alpha1.KindServiceBinding, b, op.BindingID)
	})
	if err := e.checkID(ctx, v1alpha1.KindServiceInstance, t.inst, op.InstanceID); err != nil {
		return err
	}
	if _, err := bindingID.Wait(); err != nil {
		return err
	}
	if !bind {
		return nil
	}
	if err := e.checkPlan(ctx, b.Namespace, t.target, op.PlanID); err != nil {
		return err
	}
	for _, tr := range b.Spec.SecretTransforms {
		if a := tr.AddKeysFrom; a != nil {
			if err := e.authorize(ctx, b, authorizationv1.ResourceAttributes{Namespace: b.Namespace, Verb: "get", Resource: "secrets", Name: a.SecretRef.Name}); err != nil {
				return err
			}
		}
	}
	return nil
}

// authorizeProjections refuses to project b's Secret into a workload its author may not
// change. Every workload the spec names is checked, also one the status lists as
// projected: a status proves nothing (anyone who may update the ConfigMap writes it),
// and the spec's author, or its Secret name, may have changed since. Taking a projection
// back needs no such check: it removes only what the binding added.
func (e *Engine) authorizeProjections(ctx context.Context, b *v1alpha1.ServiceBinding) error {
	for _, p := range b.Spec.Projections {
		group, resource := workloadResource(p.Kind)
		if resource == "" {
			return refused(ReasonRefusedUntrustedReference, "binding %q names a workload of kind %q, which cannot receive a projection", b.Name, p.Kind)
		}
		if err := e.authorize(ctx, b, authorizationv1.ResourceAttributes{Namespace: b.Namespace, Verb: "update", Group: group, Resource: resource, Name: p.Name}); err != nil {
			return err
		}
	}
	return nil
}

func workloadResource(kind string) (group, resource string) {
	switch kind {
	case "Deployment":
		return "apps", "deployments"
	case "StatefulSet":
		return "apps", "statefulsets"
	case "DaemonSet":
		return "apps", "daemonsets"
	case "CronJob":
		return "batch", "cronjobs"
	case "Job":
		return "batch", "jobs"
	}
	return "", ""
}

// checkParametersTo refuses to send params, when some came from the Secrets that from
// names (in namespace), to a namespace-scoped broker whose record's author may not read
// those Secrets. A broker record is a ConfigMap that whoever may write ConfigMaps in its
// namespace may point at a server of their own; the author of the instance or binding
// reading the Secrets does not make the broker's author someone who may receive them. A
// cluster-scoped broker is the administrators' (the catalog namespace) and is trusted.
// A re-send of an interrupted call is not checked: it repeats what was sent, and needs no
// author's authority (it reads only the Secret its record owns).
func (e *Engine) checkParametersTo(ctx context.Context, b *v1alpha1.Broker, namespace string, from []v1alpha1.ParametersFromSource, params *Parameters) error {
	if b.Namespace == e.cfg.CatalogNamespace || params == nil || len(params.FromSecret) == 0 {
		return nil
	}
	for _, pf := range from {
		if pf.SecretKeyRef == nil {
			continue
		}
		if err := e.authorize(ctx, b, authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "get", Resource: "secrets", Name: pf.SecretKeyRef.Name}); err != nil {
			r, ok := AsRefused(err)
			if !ok {
				return err
			}
			return &RefusedError{Reason: r.Reason, Message: fmt.Sprintf("parameters from Secret %q are not sent to broker %q, whose record another author wrote: %s", pf.SecretKeyRef.Name, b.Name, r.Message), Transient: r.Transient}
		}
	}
	return nil
}
