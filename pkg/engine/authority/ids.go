package authority

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// CheckID refuses to send OSB id for rec (of kind, an instance or a binding) when the id
// is not rec's (CheckOwnID), or when another record, in any namespace, already uses it:
// an older record for an id bound to rec's namespace, the record that claimed it first
// for an id bound to nothing (checkAdoptedID). Ids show up in describe output,
// dashboards and logs, and copying one into a record must not make the engine act on
// someone else's instance or binding with the broker's credentials.
func (auth *Authority) CheckID(ctx context.Context, kind string, rec IDOwner, id string) error {
	return auth.checkID(ctx, kind, rec, id, true)
}

// CheckTargetID is CheckID for the id of a record that is not the one being driven (a
// binding's instance): it makes no id claim for that record. An id bound to nothing is
// sent for another record's call only once that record has its own claim, made by its
// own step or on its creation, or by reconcile's first pass (ClaimSpecIDs): a status
// saying the record is provisioned proves nothing, and a claim made for it by the first
// call that names it would give the id to whoever calls first.
func (auth *Authority) CheckTargetID(ctx context.Context, kind string, rec IDOwner, id string) error {
	return auth.checkID(ctx, kind, rec, id, false)
}

func (auth *Authority) checkID(ctx context.Context, kind string, rec IDOwner, id string, mayClaim bool) error {
	return auth.checkIDAs(ctx, kind, rec, id, claimModeOf(mayClaim))
}

// claimMode is what a check of an OSB id bound to nothing does about the record's id
// claim: make it (claimOwn), refuse without one (needClaim), or neither (unclaimedOK:
// an unbind, which only takes away a binding, under an instance whose claim cannot be
// made, in a namespace being deleted).
type claimMode int

const (
	claimOwn claimMode = iota
	needClaim
	unclaimedOK
)

func claimModeOf(mayClaim bool) claimMode {
	if mayClaim {
		return claimOwn
	}
	return needClaim
}

// CheckUnbindTargetID is CheckTargetID for an unbind's instance id: an instance without
// an id claim is refused only when another record that uses the id adopted it first (a
// claim, or, among records without one, an older record). An unbind takes away the
// binding, whose own id is checked as always (CheckID), and gives nobody anything; an
// instance being deleted in a namespace being deleted, which refuses every new
// ConfigMap, can make no claim, and its bindings would otherwise never be unbound nor
// the instance deprovisioned.
func (auth *Authority) CheckUnbindTargetID(ctx context.Context, kind string, rec IDOwner, id string) error {
	return auth.checkIDAs(ctx, kind, rec, id, unclaimedOK)
}

func (auth *Authority) checkIDAs(ctx context.Context, kind string, rec IDOwner, id string, mode claimMode) error {
	if err := auth.CheckOwnIDIn(ctx, kind, rec, id); err != nil {
		return err
	}
	key := kind + "/" + id
	c := &auth.cache
	c.mu.Lock()
	owner, ok := c.owned[key]
	c.mu.Unlock()
	if ok && owner == string(rec.GetUID()) {
		return nil
	}
	if !v1alpha1.IsBoundID(id) {
		return auth.checkAdoptedID(ctx, kind, rec, id, mode)
	}
	if moved, err := auth.movedID(ctx, rec, id); err != nil || moved {
		if err != nil {
			return err
		}
		return auth.checkAdoptedID(ctx, kind, rec, id, mode)
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
		if users, err = auth.boundIDUsers(ctx, kind, rec.GetNamespace(), id); err != nil {
			return err
		}
	}
	u, err := auth.olderHolder(ctx, kind, rec, id, users)
	if err != nil {
		return err
	}
	if u != nil {
		return Refused(ReasonRefusedIDInUse, "refused to send OSB id %s: %s %q in namespace %q, created before this record, already uses it", id, strings.ToLower(kind), u.Name, u.Namespace)
	}
	auth.NoteOwnID(kind, rec, id)
	return nil
}

// NoteOwnID remembers that the check of OSB id found it rec's, so that the checks of
// rec's later calls in this process need no list.
func (auth *Authority) NoteOwnID(kind string, rec metav1.Object, id string) {
	c := &auth.cache
	c.mu.Lock()
	if c.owned == nil || len(c.owned) > 100000 {
		c.owned = map[string]string{}
	}
	c.owned[kind+"/"+id] = string(rec.GetUID())
	c.mu.Unlock()
}

// idUsers lists the records of kind, in every namespace, that use OSB id id (the list
// ctx carries, if any: Env.TakeIDList); for a user who may not list records of
// every namespace, those of namespace, which they may see, and narrowed is the refusal of
// the list of every namespace: the list then says nothing of the records of others.
func (auth *Authority) idUsers(ctx context.Context, kind, namespace, id string) (users []store.IDUser, narrowed, err error) {
	list, ok := auth.env().TakeIDList(ctx, kind, id)
	if !ok {
		list = ahead.Done(auth.env().Store.WithExternalID(ctx, kind, "", id))
	}
	users, err = list.Wait()
	if store.IsForbidden(err) {
		narrowed = err
		users, err = auth.env().Store.WithExternalID(ctx, kind, namespace, id)
		return users, narrowed, err
	}
	return users, nil, err
}

// unseenIDUsers is the error of a check of OSB id, bound to nothing, for rec that could
// list only the records of rec's namespace: a record of another namespace may have
// adopted the id first, and nothing this user may read says whether one did. The call is
// left to reconcile, which lists every namespace (Env.LeftToReconcile); cause is the
// refusal of the list.
func (auth *Authority) unseenIDUsers(kind string, rec IDOwner, id string, cause error) error {
	what := kindWord(kind)
	return auth.env().LeftToReconcile(fmt.Sprintf("you may not list the records of every namespace, and OSB id %s of %s %q in namespace %q is bound to nothing (taken over with --external-id or by a migration): a record of another namespace may have adopted it first, so reconcile, which sees every namespace, checks it and sends the request (the installed CronJob or \"kubectl catalog reconcile\" run by an administrator)",
		id, what, rec.GetName(), rec.GetNamespace()), cause)
}

// boundIDUsers is idUsers for an id bound to a uid or a namespace that the check found
// the record's own (CheckOwnIDIn): bound to the record's uid or to its namespace, so
// that only a record of the record's namespace can hold it (holds), and the records of
// that namespace alone are listed, unless a list of every namespace was started ahead
// (Env.TakeIDList). A list of one namespace costs the API server that namespace's
// records, not the cluster's.
func (auth *Authority) boundIDUsers(ctx context.Context, kind, namespace, id string) ([]store.IDUser, error) {
	if list, ok := auth.env().TakeIDList(ctx, kind, id); ok {
		users, err := list.Wait()
		if !store.IsForbidden(err) {
			return users, err
		}
	}
	return auth.env().Store.WithExternalID(ctx, kind, namespace, id)
}

// UseIDIndex makes the check that no older record uses an OSB id answer from idx, the id
// labels of the records reconcile has just listed (store.ListPendingWithIDs), where idx
// can answer: for records it listed, created before the newest record it listed. It
// replaces the index given before; nil stops using one.
func (auth *Authority) UseIDIndex(idx *store.IDIndex) {
	auth.cache.mu.Lock()
	auth.cache.ids = idx
	auth.cache.mu.Unlock()
}

// olderHolder is the first of users (records WithExternalID found labelled with OSB id
// id) other than rec, created no later than rec, that is a real record using id
// (store.HoldsExternalID); nil when there is none. A ConfigMap with the id's label that
// holds no readable record naming the id, as anyone who may write ConfigMaps can create,
// keeps no record from its calls. One the reader may not read counts: nobody can tell.
func (auth *Authority) olderHolder(ctx context.Context, kind string, rec metav1.Object, id string, users []store.IDUser) (*store.IDUser, error) {
	created := rec.GetCreationTimestamp()
	for _, u := range users {
		if u.UID == rec.GetUID() || created.Time.Before(u.Created.Time) {
			continue
		}
		holds, err := auth.holdsCounting(ctx, kind, u, id, false)
		if err != nil {
			return nil, err
		}
		if holds {
			return &u, nil
		}
	}
	return nil, nil
}

// IDOwner is a record that says which OSB ids are its own.
type IDOwner interface {
	metav1.Object
	OwnsExternalID(id string) bool
	OwnsExternalIDIn(id string, key v1alpha1.NamespaceKey) bool
}

// namespaceKeys reads a namespace's key (the engine's Platform).
type namespaceKeys interface {
	ClusterID(ctx context.Context) (string, error)
	NamespaceUID(ctx context.Context, namespace string) (string, error)
}

// NamespaceKey is the key of namespace (v1alpha1.NamespaceKey), as the engine's platform
// reads it: the cluster id and the namespace's uid; not Valid when the platform cannot
// tell (it answers the namespace's name for a uid it may not read), and then no id bound
// to a key is the namespace's.
func (auth *Authority) NamespaceKey(ctx context.Context, namespace string) (v1alpha1.NamespaceKey, error) {
	p, ok := auth.env().Platform.(namespaceKeys)
	if !ok || p == nil {
		return v1alpha1.NamespaceKey{}, nil
	}
	// The two reads are independent and go out together.
	clusterRead := ahead.Start(ctx, func() (string, error) { return p.ClusterID(ctx) })
	uid, err := p.NamespaceUID(ctx, namespace)
	cluster, cerr := clusterRead.Wait()
	if cerr != nil {
		cluster = "" // ids bound to the uid alone are checked all the same
	}
	if err != nil || uid == namespace {
		return v1alpha1.NamespaceKey{}, err
	}
	key := v1alpha1.NamespaceKey{ClusterID: cluster, UID: types.UID(uid)}
	if m, ok := p.(namespaceMovedKeys); ok {
		// Not read: the namespace continues none, and no moved id is its.
		key.Moved, _ = m.NamespaceMovedKeys(ctx, namespace)
	}
	return key, nil
}

// namespaceMovedKeys is a platform that reads which namespaces of other clusters a
// namespace continues (v1alpha1.AnnotationMovedKeys on its Namespace object).
type namespaceMovedKeys interface {
	NamespaceMovedKeys(ctx context.Context, namespace string) (string, error)
}

// ReadNamespaceKeysAhead starts reading the keys of namespaces (NamespaceKey), which the
// platform keeps, when one of ids is bound to a namespace's key: the checks of a step
// that sends them then find the key read, its reads having gone out with the step's
// first ones. Nothing is read for ids of other forms.
func (auth *Authority) ReadNamespaceKeysAhead(ctx context.Context, ids []string, namespaces ...string) {
	nameBound := func(id string) bool {
		return slices.ContainsFunc(namespaces, func(ns string) bool { return v1alpha1.IDBoundTo(id, ns, "") })
	}
	if !slices.ContainsFunc(ids, func(id string) bool { return v1alpha1.IsBoundID(id) && !nameBound(id) }) {
		return
	}
	for _, ns := range namespaces {
		ahead.Start(ctx, func() (v1alpha1.NamespaceKey, error) { return auth.NamespaceKey(ctx, ns) })
	}
}

// CheckOwnIDIn is CheckOwnID, an id bound to the key of rec's namespace (NamespaceKey)
// also rec's own.
func (auth *Authority) CheckOwnIDIn(ctx context.Context, kind string, rec IDOwner, id string) error {
	if rec.OwnsExternalID(id) {
		return nil
	}
	key, err := auth.NamespaceKey(ctx, rec.GetNamespace())
	if err != nil {
		return err
	}
	if rec.OwnsExternalIDIn(id, key) {
		return nil
	}
	also := ""
	if v1alpha1.IsBoundID(id) && key.ClusterID != "" {
		// An id bound to the namespace's key under another cluster id is most often one
		// made by the catalog of another catalog namespace: said first, before the ways
		// that drop the record.
		also = fmt.Sprintf(" (or made by the catalog of another catalog namespace: this catalog's namespace is %q, its cluster id %q; run the command with the --catalog-namespace, or KUBECTL_CATALOG_NAMESPACE, of the catalog that made the record)",
			auth.env().CatalogNamespace, key.ClusterID)
	}
	return checkOwnID(kind, rec, id, also)
}

// movedID reports whether OSB id, which rec owns (CheckOwnIDIn), is an id generated on
// another cluster that rec took over by a move (v1alpha1.MovedIDIn): bound neither to
// rec nor to its namespace here, it is owned as an id bound to nothing is, by the record
// whose id claim is oldest (checkAdoptedID).
func (auth *Authority) movedID(ctx context.Context, rec IDOwner, id string) (bool, error) {
	if !v1alpha1.MovedKey(rec.GetAnnotations()).Valid() || !v1alpha1.IsBoundID(id) || v1alpha1.IDBoundTo(id, rec.GetNamespace(), rec.GetUID()) {
		return false, nil
	}
	key, err := auth.NamespaceKey(ctx, rec.GetNamespace())
	if err != nil {
		return false, err
	}
	return !v1alpha1.IDBoundToNamespace(id, key) && v1alpha1.MovedIDIn(id, rec.GetAnnotations(), key), nil
}

// holds is store.HoldsExternalIDIn for u, with the key of u's namespace.
func (auth *Authority) holds(ctx context.Context, kind string, u store.IDUser, id string) (bool, error) {
	return auth.holdsAs(ctx, kind, u, id, false)
}

// holdsCounting is holdsAs, where a record the reader may not read counts as holding
// the id: nobody can tell.
func (auth *Authority) holdsCounting(ctx context.Context, kind string, u store.IDUser, id string, moved bool) (bool, error) {
	holds, err := auth.holdsAs(ctx, kind, u, id, moved)
	if store.IsForbidden(err) {
		return true, nil
	}
	return holds, err
}

// holdsAs is holds; moved: id may be one generated on another cluster and moved in
// (v1alpha1.MovedIDIn), which any record that names it may hold, and u is read whatever
// the id is bound to.
func (auth *Authority) holdsAs(ctx context.Context, kind string, u store.IDUser, id string, moved bool) (bool, error) {
	var key v1alpha1.NamespaceKey
	if v1alpha1.IsBoundID(id) {
		var err error
		if key, err = auth.NamespaceKey(ctx, u.Namespace); err != nil {
			return false, err
		}
		// An id bound to a uid or a namespace is owned only by the record or the
		// namespace it is bound to: a ConfigMap elsewhere labelled with it cannot
		// hold it, whatever it contains, and is not read (a tenant's labelled junk
		// would otherwise cost every check one read each).
		if !moved && !v1alpha1.IDBoundTo(id, u.Namespace, u.UID) && !v1alpha1.IDBoundToNamespace(id, key) {
			return false, nil
		}
	}
	return auth.env().Store.HoldsExternalIDIn(ctx, kind, u, id, key)
}

// CheckOwnID refuses to send OSB id for rec (of kind) unless the id is rec's own: bound
// to its uid or namespace, or named by its spec (v1alpha1.ServiceInstance.OwnsExternalID).
// Ownership is never read from a status, labels or the time a record was created: a
// status is free to write for anyone who may update the ConfigMap, so an id copied into
// an older record's status would otherwise make it the id's first user.
func CheckOwnID(kind string, rec IDOwner, id string) error {
	return checkOwnID(kind, rec, id, "")
}

// checkOwnID is CheckOwnID, also said after why an id bound to another owner is not rec's.
func checkOwnID(kind string, rec IDOwner, id, also string) error {
	if rec.OwnsExternalID(id) {
		return nil
	}
	what := kindWord(kind)
	how := fmt.Sprintf("if the broker holds it for this %s, take it over in a record of its own (\"kubectl catalog %s --external-id %s\"); otherwise remove it from the status (status.externalID, status.externalIDs, status.inFlight), or drop the record without calling the broker (%s)",
		what, map[string]string{"instance": "provision", "binding": "bind"}[what], id, hint.Quoted(rec.GetNamespace(), map[string]string{"instance": "deprovision", "binding": "unbind"}[what], "--abandon", rec.GetName()))
	why := "its spec does not name it"
	if v1alpha1.IsBoundID(id) {
		why = "it was generated for another record or namespace" + also
	}
	return Refused(ReasonRefusedIDNotOwned, "refused to send OSB id %s for %s %q in namespace %q: %s, and a status proves nothing (whoever may update the ConfigMap writes it): %s",
		id, what, rec.GetName(), rec.GetNamespace(), why, how)
}

// checkAdoptedID refuses to send OSB id, bound to nothing and named by rec's spec (so
// rec's own: CheckOwnID), when another record whose spec names it adopted it first. A
// spec is free to rewrite on a record of any age, so the time a record was created says
// nothing about when it took the id; the creationTimestamp of its id claim
// (store.ClaimExternalID), which the API server sets and nobody can change, does. A
// record with a claim wins over any without. A record without a claim gets one here,
// before any call under the id (mayClaim; a check for another record's call makes
// none, and refuses), but not before every older record that uses the id without one
// (records of earlier releases, a claim refused by a quota) got its own: a claim made
// first by whoever calls first would otherwise take the id from them. Among records
// without one (a user who may not create ConfigMaps in an older record's namespace
// leaves its claim to reconcile), the older record keeps the id.
func (auth *Authority) checkAdoptedID(ctx context.Context, kind string, rec IDOwner, id string, mode claimMode) error {
	self := store.IDUser{Namespace: rec.GetNamespace(), Name: rec.GetName(), UID: rec.GetUID(), Created: rec.GetCreationTimestamp()}
	find := func(users []store.IDUser) (store.IDUser, bool) {
		if i := slices.IndexFunc(users, func(u store.IDUser) bool { return u.UID == self.UID }); i >= 0 {
			return users[i], !users[i].Adopted.IsZero()
		}
		return store.IDUser{}, false
	}
	auth.cache.mu.Lock()
	idx := auth.cache.ids
	auth.cache.mu.Unlock()
	// The index of reconcile's list answers when it shows this record's claim and no
	// other record with the id: a claim made since is younger than this one.
	if users, ok := idx.Lookup(kind, "", id, rec.GetUID()); ok && len(users) == 1 {
		if _, claimed := find(users); claimed {
			auth.NoteOwnID(kind, rec, id)
			return nil
		}
	}
	users, narrowed, err := auth.idUsers(ctx, kind, rec.GetNamespace(), id)
	if err != nil {
		return err
	}
	if narrowed != nil {
		// Checked before any claim is made: a claim made by who cannot see an older
		// record's use of the id elsewhere would be taken as the first.
		return auth.unseenIDUsers(kind, rec, id, narrowed)
	}
	if u, claimed := find(users); claimed {
		self.Adopted, self.AdoptedVersion = u.Adopted, u.AdoptedVersion
	} else if mode == unclaimedOK {
		// No claim made, none needed: the records that adopted the id first refuse it.
	} else if mode == needClaim {
		what := kindWord(kind)
		return Refused(ReasonRefusedIDNotOwned, "refused to send OSB id %s of %s %q in namespace %q: its spec names the id, bound to nothing, and it has no id claim for it yet, so nothing shows it adopted the id before another record (a status saying it is provisioned proves nothing); the %s's own next step, or reconcile, makes its claim after those of older records that use the id",
			id, what, rec.GetName(), rec.GetNamespace(), what)
	} else {
		var claimed, older bool
		swept, err := auth.claimsSwept(ctx)
		if err != nil {
			return err
		}
		if !swept {
			if claimed, older, err = auth.claimOlderUsers(ctx, kind, self, id, users); err != nil {
				return err
			}
		} else if err := auth.checkLateMigrated(ctx, kind, rec, id, users); err != nil {
			return err
		}
		if !older {
			var t metav1.Time
			if t, self.AdoptedVersion, err = auth.claimID(ctx, kind, rec, id); err != nil {
				return err
			}
			self.Adopted = t
			claimed = claimed || !t.IsZero()
		}
		if claimed {
			// A claim another record made while this one was made is in a list read
			// after it; which of the two is older, both checks agree.
			if users, narrowed, err = auth.idUsers(ctx, kind, rec.GetNamespace(), id); err != nil || narrowed != nil {
				if err == nil {
					err = auth.unseenIDUsers(kind, rec, id, narrowed)
				}
				return err
			}
		}
	}
	slices.SortFunc(users, func(a, b store.IDUser) int { c, _ := compareAdoption(a, b); return c })
	first, err := auth.migratedFirst(ctx, kind, rec, self)
	if err != nil {
		return err
	}
	for _, u := range users {
		c, known := compareAdoption(u, self)
		if u.UID == self.UID || c > 0 && known || first(u) {
			continue
		}
		holds, err := auth.holdsCounting(ctx, kind, u, id, true)
		if err != nil {
			return err
		}
		if !holds {
			continue
		}
		since := "has none"
		if !self.Adopted.IsZero() {
			since = "is from " + self.Adopted.UTC().Format(time.RFC3339)
		}
		first := "created before this record, without an id claim"
		switch {
		case !known:
			first = "in the same second as this record (" + u.Adopted.UTC().Format(time.RFC3339) + ", their id claims), so that neither keeps it"
		case !u.Adopted.IsZero():
			first = "since " + u.Adopted.UTC().Format(time.RFC3339) + " (its id claim)"
		}
		what := kindWord(kind)
		undo := map[string]string{"instance": "deprovision", "binding": "unbind"}[what]
		return Refused(ReasonRefusedIDInUse, "refused to send OSB id %s for %s %q in namespace %q: %s %q in namespace %q adopted it first, %s; this record's id claim %s. "+
			"The id is that record's at the broker: if this record's spec was changed to name it, change spec.externalID back, or drop this record without calling the broker (%s)",
			id, what, rec.GetName(), rec.GetNamespace(), what, u.Name, u.Namespace, first, since, hint.Quoted(rec.GetNamespace(), undo, "--abandon", rec.GetName()))
	}
	if !self.Adopted.IsZero() {
		auth.NoteOwnID(kind, rec, id)
	}
	return nil
}

// claimsSwept reports whether reconcile's first pass claimed the spec ids of every record
// of the cluster (store.IDClaimsMarker, in the catalog namespace, which tenants do not
// write). From then on a record that uses an id bound to nothing without a claim is not
// one of an earlier release that used it all along: its writer could not make its claim
// (a migration, an apply or a provision --external-id interrupted between the record and
// its claim), or its spec was rewritten since to name the id, and its creationTimestamp
// says nothing about when it took the id. checkAdoptedID then claims no older record
// before rec (claimOlderUsers): the first claim made keeps the id. A marker its reader
// may not read counts as absent; one whose read failed (a fault) is the error: taking
// the cluster for one never swept would give the first claim to the older record.
func (auth *Authority) claimsSwept(ctx context.Context) (bool, error) {
	auth.cache.mu.Lock()
	done := auth.cache.swept[""]
	auth.cache.mu.Unlock()
	if done {
		return true, nil
	}
	env := auth.env()
	if env.CatalogNamespace == "" {
		return false, nil
	}
	swept, err := env.Store.IDClaimsSwept(ctx, env.CatalogNamespace)
	if err != nil && !store.IsForbidden(err) {
		return false, fmt.Errorf("cannot tell whether reconcile claimed the OSB ids of every record: %w", err)
	}
	if !swept {
		return false, nil
	}
	auth.cache.mu.Lock()
	if auth.cache.swept == nil {
		auth.cache.swept = map[string]bool{}
	}
	auth.cache.swept[""] = true
	auth.cache.mu.Unlock()
	return true, nil
}

// compareAdoption orders records that use an OSB id bound to nothing by when they
// adopted it: a record with an id claim before one without; of two claims, the one made
// first (by the API server's seconds, then, in the same second, by resourceVersion, an
// etcd revision that grows with every write); of two records without one, the older
// record, then by uid; so that every check orders them alike. known is false for two
// claims of the same second whose resourceVersions are not numbers: nobody can tell
// which came first, and checkAdoptedID refuses both.
func compareAdoption(a, b store.IDUser) (c int, known bool) {
	if a.Adopted.IsZero() != b.Adopted.IsZero() {
		if a.Adopted.IsZero() {
			return 1, true
		}
		return -1, true
	}
	if !a.Adopted.IsZero() {
		if c := a.Adopted.Time.Compare(b.Adopted.Time); c != 0 {
			return c, true
		}
		av, errA := strconv.ParseUint(a.AdoptedVersion, 10, 64)
		bv, errB := strconv.ParseUint(b.AdoptedVersion, 10, 64)
		if errA != nil || errB != nil {
			return strings.Compare(string(a.UID), string(b.UID)), false
		}
		return cmp.Compare(av, bv), true
	}
	if c := a.Created.Time.Compare(b.Created.Time); c != 0 {
		return c, true
	}
	return strings.Compare(string(a.UID), string(b.UID)), true
}

// claimOlderUsers makes the id claims of the records of users that use OSB id (bound to
// nothing) without one and were created before self, oldest first, before self makes
// its own: a claim is when a record adopted the id, and an older record that has none
// yet is there since before self's. claimed says whether a claim was made; older, that
// an older record without a claim is left (its claim may not be made by this user):
// self then makes none either, and the older record keeps the id.
func (auth *Authority) claimOlderUsers(ctx context.Context, kind string, self store.IDUser, id string, users []store.IDUser) (claimed, older bool, err error) {
	users = slices.Clone(users)
	slices.SortFunc(users, func(a, b store.IDUser) int { c, _ := compareAdoption(a, b); return c })
	for _, u := range users {
		if u.UID == self.UID || !u.Adopted.IsZero() {
			continue
		}
		if c, _ := compareAdoption(u, self); c >= 0 {
			continue
		}
		holds, err := auth.holdsAs(ctx, kind, u, id, true)
		if err != nil && !store.IsForbidden(err) {
			return claimed, older, err
		}
		if !holds && err == nil {
			continue
		}
		t, _, err := auth.env().Store.ClaimExternalIDOf(ctx, kind, u, id)
		switch {
		case store.IsForbidden(err):
			older = true
		case err != nil:
			return claimed, older, err
		case !t.IsZero():
			claimed = true
		}
	}
	return claimed, older, nil
}

// ClaimSpecIDs makes, once a process for each namespace ("" for all), the id claims of
// every record of namespace whose spec names an OSB id bound to nothing and that has
// none yet (records of earlier releases, never stepped again; a claim refused by a
// quota), oldest record first, and gives claims of earlier releases their finalizer
// (store.IDClaimFinalizer): reconcile's first pass, before it steps any record, so that
// no record's first call makes the first claim of an id another record has used all
// along. idx is the index of the run's list, whose claims need not be made again; nil
// is none. A claim that may not be made (a namespace being deleted, a user who may not
// create ConfigMaps there) is left to the record's own step. It also releases the id
// claims idx holds whose record is gone (store.ReleaseStrayIDClaim): none is left
// behind for ever.
func (auth *Authority) ClaimSpecIDs(ctx context.Context, namespace string, idx *store.IDIndex) error {
	if idx.Partial() {
		return nil // an index of some namespaces says nothing of the others' claims
	}
	var errs []error
	for _, c := range idx.Stray() {
		if _, err := auth.env().Store.ReleaseStrayIDClaim(ctx, c); err != nil && !store.IsForbidden(err) {
			errs = append(errs, err)
		}
	}
	auth.cache.mu.Lock()
	done := auth.cache.swept[namespace] || auth.cache.swept[""]
	auth.cache.mu.Unlock()
	st, catalogNS := auth.env().Store, auth.env().CatalogNamespace
	if !done {
		// Once every record of the cluster has its claims, records get theirs when
		// they are created: the marker saves each later run the reads.
		var err error
		if done, err = st.IDClaimsSwept(ctx, catalogNS); err != nil && !store.IsForbidden(err) {
			// Not a cluster never swept: the pass would give the first claims to the
			// older records (claimOlderUsers). The next run looks again.
			return errors.Join(append(errs, fmt.Errorf("cannot tell whether reconcile claimed the OSB ids of every record: %w", err))...)
		}
	}
	if done {
		return errors.Join(append(errs, auth.claimLoneMigrated(ctx, idx))...)
	}
	// One read of each record's spec, or pages of a list of them all when most need one.
	uses, err := st.UnclaimedSpecIDs(ctx, idx)
	if err != nil {
		errs = append(errs, err)
	}
	slices.SortStableFunc(uses, func(a, b store.SpecIDUse) int { c, _ := compareAdoption(a.IDUser, b.IDUser); return c })
	// left: a claim could not be made (a namespace being deleted, a claim refused); the
	// cluster is not marked done, since a record without a claim then counts as one
	// of an earlier release no longer (claimsSwept).
	left := false
	for _, u := range uses {
		// Older records of any namespace that use the id without a claim get theirs
		// first, as before a record's first call (checkAdoptedID).
		users, narrowed, err := auth.idUsers(ctx, u.Kind, u.Namespace, u.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if narrowed != nil {
			left = true
			continue // left to the record's own step, which leaves it to a reconcile that sees every namespace
		}
		_, older, err := auth.claimOlderUsers(ctx, u.Kind, u.IDUser, u.ID, users)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if older {
			left = true
			continue
		}
		_, _, err = st.ClaimExternalIDOf(ctx, u.Kind, u.IDUser, u.ID)
		left = left || store.IsForbidden(err)
		if err != nil && !store.IsForbidden(err) && !store.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 && !left {
		auth.cache.mu.Lock()
		if auth.cache.swept == nil {
			auth.cache.swept = map[string]bool{}
		}
		auth.cache.swept[namespace] = true
		auth.cache.mu.Unlock()
		if namespace == "" && idx != nil {
			_ = st.MarkIDClaimsSwept(ctx, catalogNS)
		}
	}
	return errors.Join(errs...)
}

// claimLoneMigrated makes, at every reconcile run once the cluster is swept, the id claims
// of the records "migrate svcat" wrote, not being deleted, without one (its claim failed: a fault, the run
// killed between the record and its claim) for the spec ids bound to nothing that no
// other record uses: such a record is settled and has no step of its own to make it,
// and a tenant who names the id later would otherwise claim it first. An id another
// record uses too is left to the first of their steps to claim (checkAdoptedID): the
// pass takes no side. The annotation counts only as loneMigrated says: under a trust
// policy that covers it, only when the record's verified author may read the Service
// Catalog's objects; without one, never against a record of another namespace.
func (auth *Authority) claimLoneMigrated(ctx context.Context, idx *store.IDIndex) error {
	var errs []error
	st := auth.env().Store
	for _, w := range idx.UnclaimedMigrated() {
		uses, err := st.SpecIDsOf(ctx, w.Kind, w.Namespace, w.Name, w.UID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, u := range uses {
			users, narrowed, err := auth.idUsers(ctx, u.Kind, u.Namespace, u.ID)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			// Records that are not migrated ones and have no claim do not contest it
			// (lateMigratedUser refuses their claim meanwhile), unless nothing verifies
			// the migration and they are of another namespace (loneMigrated).
			if narrowed != nil {
				continue
			}
			if lone, err := auth.loneMigrated(ctx, u.Kind, u.IDUser, users); err != nil || !lone {
				if err != nil {
					errs = append(errs, err)
				}
				continue
			}
			if _, _, err := st.ClaimExternalIDOf(ctx, u.Kind, u.IDUser, u.ID); err != nil && !store.IsForbidden(err) && !store.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// claimID makes rec's id claim for OSB id (store.ClaimExternalID) and returns its time
// and resourceVersion; zero, and no error, when the user may not create ConfigMaps in
// rec's namespace (a user binding an instance shared with theirs): the claim is then
// made by the next step of the record's own namespace.
func (auth *Authority) claimID(ctx context.Context, kind string, rec metav1.Object, id string) (metav1.Time, string, error) {
	r, ok := rec.(v1alpha1.Record)
	if !ok || rec.GetUID() == "" {
		return metav1.Time{}, "", nil
	}
	t, version, err := auth.env().Store.ClaimExternalID(ctx, kind, r, id)
	if store.IsForbidden(err) {
		return metav1.Time{}, "", nil
	}
	return t, version, err
}

// ClaimRecordSpecIDs makes the id claims of a record just created whose spec names OSB ids
// bound to nothing (adopted with --external-id, migrated, applied), so that the time
// it adopted them is set now (see checkAdoptedID). A claim that cannot be made now is
// made before the record's first call under the id; the error says which could not be
// made (none for a user who may not create ConfigMaps in the record's namespace).
func (auth *Authority) ClaimRecordSpecIDs(ctx context.Context, rec v1alpha1.Record) error {
	kind, ids := v1alpha1.KindServiceInstance, []string{}
	switch r := rec.(type) {
	case *v1alpha1.ServiceInstance:
		ids = append(ids, r.Spec.ExternalID)
	case *v1alpha1.ServiceBinding:
		kind, ids = v1alpha1.KindServiceBinding, append(ids, r.Spec.ExternalID)
		if p := r.Spec.Predecessor; p != nil {
			ids = append(ids, p.ExternalID)
		}
	}
	var errs []error
	for _, id := range ids {
		if id != "" && !v1alpha1.IsBoundID(id) {
			if _, _, err := auth.claimID(ctx, kind, rec, id); err != nil {
				errs = append(errs, fmt.Errorf("the claim of OSB id %s: %w", id, err))
			}
		}
	}
	return errors.Join(errs...)
}

// ClaimOwnID makes rec's id claim for OSB id, bound to nothing and named by rec's spec,
// as the check before a call of rec's does (CheckID, with the claims of older records
// it makes first), at a step that sends no call under the id yet: an instance being
// deleted that waits for its bindings, whose unbinds send the instance's id only once
// the instance has its claim (CheckTargetID). Without it neither would ever be sent,
// and the first other record to claim the id would take it. A refusal (another record
// adopted the id first) or an error is left to the check of the call itself.
func (auth *Authority) ClaimOwnID(ctx context.Context, kind string, rec IDOwner, id string) {
	if id == "" || v1alpha1.IsBoundID(id) || !rec.OwnsExternalID(id) {
		return
	}
	_ = auth.checkAdoptedID(ctx, kind, rec, id, claimOwn)
}

// IDFree refuses an OSB id that a record other than namespace/name uses.
func (auth *Authority) IDFree(ctx context.Context, kind, namespace, name, id string) error {
	users, err := auth.env().Store.WithExternalID(ctx, kind, "", id)
	if store.IsForbidden(err) {
		users, err = auth.env().Store.WithExternalID(ctx, kind, namespace, id)
	}
	if err != nil {
		return err
	}
	for _, u := range users {
		if u.Namespace == namespace && u.Name == name {
			continue
		}
		// Only a real record that uses the id counts (see olderHolder).
		holds, err := auth.holdsAs(ctx, kind, u, id, true)
		if err != nil && !store.IsForbidden(err) {
			return err
		}
		if holds || err != nil {
			return Refused(ReasonRefusedIDInUse, "OSB id %s is already used by %s %q in namespace %q", id, kindWord(kind), u.Name, u.Namespace)
		}
	}
	return nil
}

func kindWord(kind string) string {
	if kind == v1alpha1.KindServiceBinding {
		return "binding"
	}
	return "instance"
}
