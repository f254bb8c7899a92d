package authority

import (
	"context"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// migration is what the engine makes of a record's annotation
// store.AnnotationMigratedFrom, which says "migrate svcat" wrote the record. Whoever may
// write a record's ConfigMap may write the annotation, so it counts only where it is
// verified, or, without a policy that could verify it, only in ways that take no id
// from a record of another namespace.
type migration int

const (
	// notMigrated: no annotation, or one that does not count: the trust policy in force
	// covers the annotation (TrustState.MigratedFrom) and the record's verified author
	// may not read the Service Catalog's objects of its kind in its namespace, or its
	// author is not verified.
	notMigrated migration = iota
	// migratedUnverified: annotated, and the policy in force does not cover the annotation
	// (no policy, or an earlier release's): anyone who may write the ConfigMap may have
	// written it. It holds back the claims of records that are not migrated ones
	// (lateMigratedUser), but takes no id another namespace's record uses without a claim
	// (unverifiedTake, loneMigrated).
	migratedUnverified
	// migratedVerified: annotated under a policy that admits the annotation only from the
	// record's author or a user who may read the Service Catalog's objects there, and the
	// record's verified author may read them in its namespace: someone who may run
	// "migrate svcat" for it.
	migratedVerified
)

// svcatGroup is the API group of the retired Service Catalog's objects.
const svcatGroup = "servicecatalog.k8s.io"

// svcatRead is the request a user who may migrate a record of kind in namespace from
// the Service Catalog may make: read its objects of that kind there.
func svcatRead(kind, namespace string) authorizationv1.ResourceAttributes {
	res := "serviceinstances"
	if kind == v1alpha1.KindServiceBinding {
		res = "servicebindings"
	}
	return authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "get", Group: svcatGroup, Resource: res}
}

// migrationOf says what rec's migrated-from annotation counts for (see migration).
func (auth *Authority) migrationOf(ctx context.Context, kind string, rec v1alpha1.Record) (migration, error) {
	if rec.GetAnnotations()[store.AnnotationMigratedFrom] == "" {
		return notMigrated, nil
	}
	if !auth.State(ctx).MigratedFrom {
		return migratedUnverified, nil
	}
	a := auth.of(ctx, rec)
	if a.unverified != "" {
		return notMigrated, nil
	}
	attrs := svcatRead(kind, rec.GetNamespace())
	user, groups := a.author.Username, a.author.Groups
	ask := func(ctx context.Context) (bool, string, error) {
		if auth.env().Authorizer == nil {
			return false, "", nil
		}
		return auth.env().Authorizer.Allowed(ctx, user, groups, attrs)
	}
	if a.self {
		user, groups = "\x00self", nil
		ask = func(ctx context.Context) (bool, string, error) {
			sa, ok := auth.env().Authorizer.(SelfAuthorizer)
			if !ok {
				return false, "", nil
			}
			return sa.SelfAllowed(ctx, attrs)
		}
	}
	key := strings.Join([]string{user, strings.Join(groups, ","), attrs.Verb, attrs.Group, attrs.Resource, attrs.Namespace, attrs.Name}, "\x00")
	c := &auth.cache
	c.mu.Lock()
	ans, ok := c.answers[key]
	c.mu.Unlock()
	if !ok || time.Since(ans.at) > CacheTTL {
		allowed, reason, err := ask(ctx)
		if err != nil {
			return notMigrated, err
		}
		ans = cachedAnswer{allowed: allowed, reason: reason, at: time.Now()}
		c.mu.Lock()
		if c.answers == nil || len(c.answers) > 10000 {
			c.answers = map[string]cachedAnswer{}
		}
		c.answers[key] = ans
		c.mu.Unlock()
	}
	if ans.allowed {
		return migratedVerified, nil
	}
	return notMigrated, nil
}

// migrationOfUser is migrationOf for u, a record as a list of ids found it: read only
// where the policy covers the annotation. A record gone or replaced counts for nothing;
// one this user may not read, as unverified (it holds back, it takes nothing).
func (auth *Authority) migrationOfUser(ctx context.Context, kind string, u store.IDUser) (migration, error) {
	if !u.Migrated {
		return notMigrated, nil
	}
	if !auth.State(ctx).MigratedFrom {
		return migratedUnverified, nil
	}
	var rec v1alpha1.Record
	var err error
	switch kind {
	case v1alpha1.KindServiceInstance:
		rec, err = auth.env().Store.Instances().Get(ctx, u.Namespace, u.Name)
	case v1alpha1.KindServiceBinding:
		rec, err = auth.env().Store.Bindings().Get(ctx, u.Namespace, u.Name)
	default:
		return notMigrated, nil
	}
	switch {
	case store.IsNotFound(err):
		return notMigrated, nil
	case store.IsForbidden(err):
		return migratedUnverified, nil
	case err != nil:
		return notMigrated, err
	case rec.GetUID() != u.UID:
		return notMigrated, nil
	}
	return auth.migrationOf(ctx, kind, rec)
}

// checkLateMigrated refuses, once the cluster is swept, a claim of OSB id (bound to
// nothing) by rec, a record without one, that would take the id from a record "migrate
// svcat" wrote whose claim is not made yet (lateMigratedUser), or, where rec's own
// migrated annotation is not verified, from a record of another namespace that uses the
// id without a claim (unverifiedTake).
func (auth *Authority) checkLateMigrated(ctx context.Context, kind string, rec IDOwner, id string, users []store.IDUser) error {
	own := notMigrated
	if r, ok := rec.(v1alpha1.Record); ok {
		var err error
		if own, err = auth.migrationOf(ctx, kind, r); err != nil {
			return err
		}
	}
	if own == notMigrated {
		u, ok, err := auth.lateMigratedUser(ctx, kind, rec, users)
		if err != nil || !ok {
			return err
		}
		return lateMigratedRefusal(kind, rec, id, u)
	}
	if own == migratedUnverified {
		return auth.unverifiedTake(ctx, kind, rec, id, users)
	}
	return nil
}

// lateMigratedUser finds, once the cluster is swept, a record other than rec that
// "migrate svcat" wrote (store.IDUser.Migrated, and its annotation counts: migrationOf;
// being deleted too: its own step then makes its claim), using OSB id bound to nothing
// without an id claim yet, when rec is not such a record itself: the migration writes
// its record, then the record's claim, and a record rewritten to name the id between the
// two (or after a claim that failed) would otherwise claim it first and take the id
// from the namespace that held it in Service Catalog. rec then makes no claim and is
// refused until the migrated record has its claim (made by the migration, its own
// step, or reconcile's next run: claimLoneMigrated, which records without a claim that
// are not migrated ones do not hold back). Under a trust policy that covers the
// annotation, a record whose annotation was forged (its verified author may not read
// the Service Catalog's objects) is no migrated one: it holds nothing back, and is held
// back itself.
func (auth *Authority) lateMigratedUser(ctx context.Context, kind string, rec IDOwner, users []store.IDUser) (store.IDUser, bool, error) {
	for _, u := range users {
		if u.UID == rec.GetUID() || !u.Migrated || !u.Adopted.IsZero() {
			continue
		}
		m, err := auth.migrationOfUser(ctx, kind, u)
		if err != nil {
			return store.IDUser{}, false, err
		}
		if m != notMigrated {
			return u, true, nil
		}
	}
	return store.IDUser{}, false, nil
}

// unverifiedTake refuses the claim of OSB id by rec, whose migrated annotation nothing
// verifies (no trust policy, or an earlier release's), while a record of another
// namespace holds the id without a claim: the annotation holds that record's claim back
// (lateMigratedUser), so a claim of rec's would take the id from it whoever wrote the
// annotation. Neither claim is made until one record stops naming the id, or the
// policy verifies the migration.
func (auth *Authority) unverifiedTake(ctx context.Context, kind string, rec IDOwner, id string, users []store.IDUser) error {
	for _, u := range users {
		if u.UID == rec.GetUID() || u.Namespace == rec.GetNamespace() || !u.Adopted.IsZero() {
			continue
		}
		holds, err := auth.holdsCounting(ctx, kind, u, id, true)
		if err != nil {
			return err
		}
		if !holds {
			continue
		}
		what := kindWord(kind)
		return Refused(ReasonRefusedIDInUse, "refused to send OSB id %s for %s %q in namespace %q: its annotation %s says \"migrate svcat\" wrote it, but nothing verifies that (%s), and %s %q in namespace %q uses the id without an id claim either: an unverified migration takes no id from another namespace's record, so neither claim is made. "+
			"An administrator runs \"kubectl catalog init\", under whose trust policy the migration of a record whose author may read the Service Catalog's objects counts; or, if this record's spec was changed to name the id, change spec.externalID back, or drop this record without calling the broker (%s)",
			id, what, rec.GetName(), rec.GetNamespace(), store.AnnotationMigratedFrom, auth.unverifiedMigrationWhy(ctx), what, u.Name, u.Namespace,
			hint.Quoted(rec.GetNamespace(), map[string]string{"instance": "deprovision", "binding": "unbind"}[what], "--abandon", rec.GetName()))
	}
	return nil
}

// unverifiedMigrationWhy says why the trust state verifies no migrated annotation.
func (auth *Authority) unverifiedMigrationWhy(ctx context.Context) string {
	st := auth.State(ctx)
	if st.Token == "" {
		return "the trust policy is not in force: " + st.Reason
	}
	return "the trust policy in force is an earlier release's, or may not be read, and does not check who sets the annotation"
}

// loneMigrated reports whether reconcile makes the late claim of u, a record "migrate
// svcat" wrote whose claim is not made (claimLoneMigrated), for OSB id that users use:
// its annotation counts, no other record that is a migrated one (its annotation
// counting) or has a claim uses the id (the pass takes no side), and, where the
// annotation is not verified, no record of another namespace uses it at all.
func (auth *Authority) loneMigrated(ctx context.Context, kind string, u store.IDUser, users []store.IDUser) (bool, error) {
	u.Migrated = true
	own, err := auth.migrationOfUser(ctx, kind, u)
	if err != nil || own == notMigrated {
		return false, err
	}
	for _, o := range users {
		if o.UID == u.UID {
			continue
		}
		if !o.Adopted.IsZero() || own == migratedUnverified && o.Namespace != u.Namespace {
			return false, nil
		}
		if !o.Migrated {
			continue
		}
		m, err := auth.migrationOfUser(ctx, kind, o)
		if err != nil || m != notMigrated {
			return false, err
		}
	}
	return true, nil
}

func lateMigratedRefusal(kind string, rec IDOwner, id string, u store.IDUser) error {
	what := kindWord(kind)
	return Refused(ReasonRefusedIDInUse, "refused to send OSB id %s for %s %q in namespace %q: %s %q in namespace %q, which \"migrate svcat\" wrote, uses it and its id claim is not made yet; it is made by reconcile's next run, and the id is that record's. "+
		"If this record's spec was changed to name it, change spec.externalID back, or drop this record without calling the broker (%s)",
		id, what, rec.GetName(), rec.GetNamespace(), what, u.Name, u.Namespace, hint.Quoted(rec.GetNamespace(), map[string]string{"instance": "deprovision", "binding": "unbind"}[what], "--abandon", rec.GetName()))
}
