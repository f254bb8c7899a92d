// Package catalogsync fetches a broker's catalog, applies its restrictions, and writes
// the difference into the broker's class (ServiceClass) and schema (ServicePlanSchemas)
// records. register, "sync broker", deregister and reconcile's relist all use it.
//
// The OSB id is the only identity of a class or plan: a renamed class is updated in place,
// and a class that disappears is another class than a new one with its old name.
//
// A fetch that fails, or a catalog that is invalid (duplicate ids, services without
// plans), changes no class: only the broker's status records the error. Classes and plans
// the broker stopped offering are marked removed-from-broker and kept while instances use
// them; without instances they are deleted.
package catalogsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// AnnotationSchemasDigest on a class record identifies the schemas last written to its
// ServicePlanSchemas record, so that a sync with unchanged schemas does not read or
// rewrite them.
const AnnotationSchemasDigest = store.Prefix + "schemas-digest"

// Syncer syncs brokers' catalogs into records.
type Syncer struct {
	st          *store.Store
	clients     *brokerclient.Factory
	now         func() time.Time
	concurrency int
	check       func(context.Context, *v1alpha1.Broker) error
	core        kubernetes.Interface
	// catalogNamespace tells cluster brokers from namespace brokers (see LimitsFor).
	catalogNamespace string
	budget           *semaphore.Weighted
	budgetSize       int64
	// sync replaces Sync's fetch and apply (WithSync).
	sync func(context.Context, *v1alpha1.Broker) error
}

// Option configures a Syncer.
type Option func(*Syncer)

// WithClock sets the clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Syncer) { s.now = now } }

// WithConcurrency sets how many records are written at once (default 8). Large catalogs
// are thousands of writes; the client's QPS limit still applies.
func WithConcurrency(n int) Option {
	return func(s *Syncer) {
		if n > 0 {
			s.concurrency = n
		}
	}
}

// WithBrokerCheck refuses to fetch the catalog of a broker check refuses (the engine's
// trust checks: a cluster-scoped broker outside the catalog namespace, credentials the
// broker's author may not read); the refusal is recorded in the broker's status like a
// failed fetch.
func WithBrokerCheck(check func(context.Context, *v1alpha1.Broker) error) Option {
	return func(s *Syncer) { s.check = check }
}

// WithSync makes Sync call sync instead of fetching the catalog and applying it: for
// the tests of the syncer's callers, which call no broker and write no class.
func WithSync(sync func(context.Context, *v1alpha1.Broker) error) Option {
	return func(s *Syncer) { s.sync = sync }
}

// New returns a Syncer writing records with st and calling brokers with clients.
func New(st *store.Store, clients *brokerclient.Factory, opts ...Option) *Syncer {
	s := &Syncer{st: st, clients: clients, now: time.Now, concurrency: 8, budget: decodeBudget, budgetSize: DecodeBudgetBytes}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Result says what a sync did.
type Result struct {
	// Classes and Plans are what the broker offers after restrictions.
	Classes, Plans int
	// Changes, by class and plan.
	ClassesAdded, ClassesUpdated, ClassesRemoved, ClassesDeleted int
	PlansAdded, PlansRemoved, PlansDeleted                       int
	// Kept names the classes and plans marked removed but kept because instances use
	// them ("CLASS" or "CLASS/PLAN").
	Kept []string
	// Warnings are things the user should know that did not stop the sync.
	Warnings []string
}

// Unchanged reports whether the sync changed no class or plan.
func (r *Result) Unchanged() bool {
	return r.ClassesAdded+r.ClassesUpdated+r.ClassesRemoved+r.ClassesDeleted+r.PlansAdded+r.PlansRemoved+r.PlansDeleted == 0
}

// Fetch gets broker b's catalog, checks it (ids present and unique, plan ids across the
// whole catalog; names unique; at least one plan per service) and keeps what restr
// allows. The catalog is decoded one service at a time and kept compressed, so its size
// in memory is a fraction of the broker's answer. The catalog must be within the
// broker's limits (LimitsFor): a body over Limits.Bytes is not read further, and a
// catalog over another limit is refused with ReasonTooLarge. The fetch waits for its
// share of the process's decoding budget (see DecodeBudgetBytes). Errors are *FetchError.
func (s *Syncer) Fetch(ctx context.Context, b *v1alpha1.Broker, restr Restrictions) (*Catalog, error) {
	lim := s.LimitsFor(b)
	release, err := s.acquire(ctx, lim.Bytes)
	if err != nil {
		return nil, classifyFetch(b, err)
	}
	defer release()
	c, err := s.clients.ClientFor(ctx, b)
	if err != nil {
		fe := classifyFetch(b, err)
		if !brokerclient.IsSecretError(err) {
			fe.Reason = ReasonClientConfig
		}
		return nil, fe
	}
	var (
		check     osb.CatalogValidator
		planOwner = map[string]string{}
		planErrs  []error
		pack      packer
		count     = limitCounter{broker: b.Name, lim: lim, namespaced: lim != ClusterBrokerLimits}
	)
	err = osb.WalkCatalog(ctx, c, &osb.CatalogRequest{MaxBytes: lim.Bytes}, func(svc *osb.Service) error {
		if err := count.add(svc); err != nil {
			return err
		}
		check.Add(svc)
		for _, p := range svc.Plans {
			if other, ok := planOwner[p.ID]; ok && other != svc.ID {
				planErrs = append(planErrs, fmt.Errorf("plan id %q is used by services %q and %q (plan ids must be unique in the catalog)", p.ID, other, svc.ID))
			}
			planOwner[p.ID] = svc.ID
		}
		if kept := restr.Service(svc); kept != nil {
			return pack.add(kept)
		}
		return nil
	})
	if err != nil {
		return nil, classifyFetch(b, err)
	}
	if err := errors.Join(check.Err(), errors.Join(planErrs...)); err != nil {
		return nil, &FetchError{Broker: b.Name, URL: b.Spec.URL, Reason: ReasonInvalid, Err: err}
	}
	return pack.catalog(), nil
}

// Sync fetches b's catalog and applies it (see Apply), then records the outcome in b's
// status: counts, time, errors. b must have been read from the store. A fetch error is
// recorded in the status, changes no class, and is returned.
func (s *Syncer) Sync(ctx context.Context, b *v1alpha1.Broker) (*Result, error) {
	if s.sync != nil {
		if err := s.sync(ctx, b); err != nil {
			return nil, err
		}
		return &Result{}, nil
	}
	if s.check != nil {
		if err := s.check(ctx, b); err != nil {
			fe := &FetchError{Broker: b.Name, URL: b.Spec.URL, Reason: ReasonRefused, Err: err}
			return nil, s.recordFailure(ctx, b, fe)
		}
	}
	restr, err := ParseRestrictions(b.Spec.CatalogRestrictions)
	if err != nil {
		fe := &FetchError{Broker: b.Name, URL: b.Spec.URL, Reason: ReasonClientConfig, Err: err}
		return nil, s.recordFailure(ctx, b, fe)
	}
	cat, err := s.Fetch(ctx, b, restr)
	if err != nil {
		var fe *FetchError
		errors.As(err, &fe)
		return nil, s.recordFailure(ctx, b, fe)
	}
	res, err := s.Apply(ctx, b, cat)
	if err != nil {
		fe := &FetchError{Broker: b.Name, URL: b.Spec.URL, Reason: ReasonStoreError,
			Err: fmt.Errorf("catalog fetched, but recording it failed: %w", err)}
		return res, s.recordFailure(ctx, b, fe)
	}
	if err := s.recordSuccess(ctx, b, res); err != nil {
		return res, err
	}
	return res, nil
}

func (s *Syncer) recordFailure(ctx context.Context, b *v1alpha1.Broker, fe *FetchError) error {
	now := metav1.NewTime(s.now())
	gen := b.Generation
	_, err := s.st.Brokers().UpdateWithRetry(ctx, b.Namespace, b.Name, func(cur *v1alpha1.Broker) error {
		st := &cur.Status
		st.LastCatalogError = fe.Error()
		st.ObservedGeneration = gen
		attempts := int32(1)
		if st.Retry != nil {
			attempts = st.Retry.Attempts + 1
		}
		next := metav1.NewTime(now.Add(backoff(attempts)))
		st.Retry = &v1alpha1.RetryState{Attempts: attempts, Reason: fe.Reason, LastError: fe.Error(), LastAttemptAt: &now, NextRetryAt: &next}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionFailed, Status: metav1.ConditionTrue,
			Reason: fe.Reason, Message: fe.Error(), ObservedGeneration: gen, LastTransitionTime: now})
		if fe.Reason == ReasonRefused {
			reason := fe.Reason
			if r, ok := fe.Err.(interface{ RefusalReason() string }); ok {
				reason = r.RefusalReason()
			}
			msg := fe.Error() + "; nothing is sent to the broker until that changes"
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionRefused, Status: metav1.ConditionTrue,
				Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: now})
			// Ready says the same, as on instances and bindings: a refused broker is not
			// used, whatever an earlier fetch brought.
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
				Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: now})
		} else {
			meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionRefused)
		}
		if st.LastCatalogFetch == nil && fe.Reason != ReasonRefused {
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
				Reason: fe.Reason, Message: "the catalog has never been fetched", ObservedGeneration: gen, LastTransitionTime: now})
		}
		return nil
	})
	if err != nil {
		return errors.Join(fe, fmt.Errorf("and recording the failure in broker %q failed too: %w", b.Name, err))
	}
	return fe
}

// backoff is the delay before retry number attempts+1: 30s doubling, capped at an hour.
func backoff(attempts int32) time.Duration {
	d := 30 * time.Second
	for i := int32(1); i < attempts && d < time.Hour; i++ {
		d *= 2
	}
	return min(d, time.Hour)
}

func (s *Syncer) recordSuccess(ctx context.Context, b *v1alpha1.Broker, res *Result) error {
	now := metav1.NewTime(s.now())
	gen := b.Generation
	_, err := s.st.Brokers().UpdateWithRetry(ctx, b.Namespace, b.Name, func(cur *v1alpha1.Broker) error {
		st := &cur.Status
		st.LastCatalogFetch = &now
		st.LastCatalogError = ""
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionRefused)
		st.ObservedGeneration = gen
		st.Retry = nil
		st.ClassCount, st.PlanCount = int32(res.Classes), int32(res.Plans)
		st.NextRelistAt = nil
		if ri := cur.Spec.RelistInterval; ri != nil && ri.Duration > 0 {
			next := metav1.NewTime(now.Add(ri.Duration))
			st.NextRelistAt = &next
		}
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionFailed)
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue,
			Reason: "CatalogFetched", Message: fmt.Sprintf("%d classes and %d plans", res.Classes, res.Plans),
			ObservedGeneration: gen, LastTransitionTime: now})
		return nil
	})
	if err != nil {
		return fmt.Errorf("catalog of broker %q recorded, but updating the broker's status failed: %w", b.Name, err)
	}
	return nil
}

// Apply writes cat (already restricted) as broker b's classes and schemas: new classes
// and plans are created, changed ones updated, vanished ones marked removed and deleted
// once no instance uses them. It does not touch b. Services are decoded, compared and
// written a few at a time (the Syncer's concurrency), so memory stays bounded by that
// many services, not by the catalog.
func (s *Syncer) Apply(ctx context.Context, b *v1alpha1.Broker, cat *Catalog) (*Result, error) {
	existing, err := s.st.Classes().List(ctx, b.Namespace, store.Filter{Broker: b.Name})
	if err != nil {
		// A corrupt class record must not make a sync recreate or delete blindly.
		return nil, fmt.Errorf("cannot read the classes of broker %q: %w", b.Name, err)
	}
	byID := make(map[string]*v1alpha1.ServiceClass, len(existing))
	for _, c := range existing {
		byID[c.Spec.ID] = c
	}
	a := &applier{s: s, b: b, res: &Result{Classes: cat.Len(), Plans: cat.Plans()}}
	offered := make(map[string]bool, cat.Len())
	for _, ps := range cat.services {
		offered[ps.id] = true
	}

	pool := newPool(s.concurrency)
	for i := range cat.services {
		old := byID[cat.services[i].id]
		pool.do(func() error {
			svc, err := cat.Service(i)
			if err != nil {
				return err
			}
			job, err := a.plan(ctx, svc, old)
			if err != nil || job == nil {
				return err
			}
			return job()
		})
	}

	// Classes the broker no longer offers.
	var gone []*v1alpha1.ServiceClass
	for _, c := range existing {
		if !offered[c.Spec.ID] {
			gone = append(gone, c)
		}
	}
	if len(gone) > 0 {
		u, err := a.usage(ctx)
		if err != nil {
			pool.fail(err)
		}
		for _, c := range gone {
			if u == nil {
				break
			}
			if u.classUsed(c.Spec.ID) {
				a.mu.Lock()
				a.res.Kept = append(a.res.Kept, c.Spec.ExternalName)
				if c.Status.RemovedFromBroker {
					a.mu.Unlock()
					continue
				}
				a.res.ClassesRemoved++
				a.mu.Unlock()
				pool.do(func() error {
					_, err := s.st.Classes().UpdateWithRetry(ctx, c.Namespace, c.Name, func(cur *v1alpha1.ServiceClass) error {
						cur.Status.RemovedFromBroker = true
						return nil
					})
					return err
				})
				continue
			}
			a.mu.Lock()
			a.res.ClassesDeleted++
			a.mu.Unlock()
			pool.do(func() error { return s.deleteClass(ctx, c.Namespace, c.Name) })
		}
	}
	err = pool.wait()
	if a.use != nil && a.use.warning != "" {
		a.res.Warnings = append(a.res.Warnings, a.use.warning)
	}
	slices.Sort(a.res.Kept)
	return a.res, err
}

// applier holds what the services of one Apply share: the result's counts and the
// broker's instance usage, loaded once, when a plan or class is found gone.
type applier struct {
	s   *Syncer
	b   *v1alpha1.Broker
	mu  sync.Mutex
	res *Result
	use *instanceUsage
}

func (a *applier) usage(ctx context.Context) (*instanceUsage, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.use == nil {
		u, err := a.s.instanceUsage(ctx, a.b)
		if err != nil {
			return nil, err
		}
		a.use = u
	}
	return a.use, nil
}

// plan compares service svc with its class record old (nil when there is none), counts
// the changes, and returns the write to make, or nil when the records are current.
func (a *applier) plan(ctx context.Context, svc *osb.Service, old *v1alpha1.ServiceClass) (func() error, error) {
	s, b := a.s, a.b
	spec := classSpec(b, svc)
	schemas := schemasSpec(b, svc)
	schemasDigest := digest(schemas)

	var status v1alpha1.ServiceClassStatus
	var added, removed, deleted int
	var kept []string
	if old != nil {
		// Keep the plans the broker dropped, marked, while instances use them.
		newIDs := map[string]bool{}
		for _, p := range spec.Plans {
			newIDs[p.ID] = true
		}
		for _, p := range old.Spec.Plans {
			if newIDs[p.ID] {
				continue
			}
			u, err := a.usage(ctx)
			if err != nil {
				return nil, err
			}
			if u.planUsed(svc.ID, p.ID) {
				spec.Plans = append(spec.Plans, p)
				status.Plans = append(status.Plans, v1alpha1.ServicePlanStatus{ID: p.ID, RemovedFromBroker: true})
				if !old.PlanRemoved(p.ID) {
					removed++
				}
				kept = append(kept, spec.ExternalName+"/"+p.ExternalName)
			} else {
				deleted++
			}
		}
		for _, p := range spec.Plans {
			if old.PlanByID(p.ID) == nil {
				added++
			}
		}
	} else {
		added = len(spec.Plans)
	}
	a.mu.Lock()
	a.res.PlansAdded += added
	a.res.PlansRemoved += removed
	a.res.PlansDeleted += deleted
	a.res.Kept = append(a.res.Kept, kept...)
	a.mu.Unlock()

	if old == nil {
		a.mu.Lock()
		a.res.ClassesAdded++
		a.mu.Unlock()
		return func() error {
			if err := s.writeSchemas(ctx, b, svc.ID, schemas, nil); err != nil {
				return err
			}
			c := &v1alpha1.ServiceClass{
				ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: v1alpha1.ClassRecordName(b.Name, svc.ID),
					Annotations: map[string]string{AnnotationSchemasDigest: schemasDigest}},
				Spec: spec, Status: status,
			}
			_, err := s.st.Classes().Create(ctx, c)
			if store.IsAlreadyExists(err) {
				// A record left by a sync that was interrupted between listing and
				// writing: overwrite it with what the broker offers now.
				_, err = s.st.Classes().UpdateWithRetry(ctx, c.Namespace, c.Name, func(cur *v1alpha1.ServiceClass) error {
					cur.Spec, cur.Status = spec, status
					setAnnotation(&cur.ObjectMeta, AnnotationSchemasDigest, schemasDigest)
					return nil
				})
			}
			return err
		}, nil
	}
	sameSpec := digest(old.Spec) == digest(spec)
	sameStatus := digest(old.Status) == digest(status)
	sameSchemas := old.Annotations[AnnotationSchemasDigest] == schemasDigest
	if sameSpec && sameStatus && sameSchemas {
		return nil, nil
	}
	if !sameSpec || old.Status.RemovedFromBroker {
		a.mu.Lock()
		a.res.ClassesUpdated++
		a.mu.Unlock()
	}
	return func() error {
		if !sameSchemas {
			if err := s.writeSchemas(ctx, b, svc.ID, schemas, old); err != nil {
				return err
			}
		}
		cur := old.DeepCopy()
		cur.Spec, cur.Status = spec, status
		setAnnotation(&cur.ObjectMeta, AnnotationSchemasDigest, schemasDigest)
		_, err := s.st.Classes().Update(ctx, cur)
		return err
	}, nil
}

// pool runs jobs, at most n at once, and joins their errors (the first five, then a
// count).
type pool struct {
	sem  chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

func newPool(n int) *pool { return &pool{sem: make(chan struct{}, max(n, 1))} }

// do starts job once fewer than n jobs run. A pool of one runs it in the caller's
// goroutine, as it would wait for it anyway, so that the caller's API requests stay in
// one goroutine and in order (the simulation, pkg/engine/sim, interleaves processes
// request by request).
func (p *pool) do(job func() error) {
	if cap(p.sem) == 1 {
		if err := job(); err != nil {
			p.fail(err)
		}
		return
	}
	p.wg.Add(1)
	p.sem <- struct{}{}
	go func() {
		defer p.wg.Done()
		defer func() { <-p.sem }()
		if err := job(); err != nil {
			p.fail(err)
		}
	}()
}

func (p *pool) fail(err error) {
	p.mu.Lock()
	p.errs = append(p.errs, err)
	p.mu.Unlock()
}

// wait waits for every job and returns their errors.
func (p *pool) wait() error {
	p.wg.Wait()
	errs := p.errs
	if len(errs) > 5 {
		errs = append(errs[:5:5], fmt.Errorf("and %d more errors", len(p.errs)-5))
	}
	return errors.Join(errs...)
}

func setAnnotation(m *metav1.ObjectMeta, k, v string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[k] = v
}

func (s *Syncer) writeSchemas(ctx context.Context, b *v1alpha1.Broker, classID string, spec v1alpha1.ServicePlanSchemasSpec, old *v1alpha1.ServiceClass) error {
	name := v1alpha1.ClassRecordName(b.Name, classID)
	if old != nil {
		_, err := s.st.PlanSchemas().UpdateWithRetry(ctx, b.Namespace, name, func(cur *v1alpha1.ServicePlanSchemas) error {
			cur.Spec = spec
			return nil
		})
		if !store.IsNotFound(err) {
			return err
		}
	}
	_, err := s.st.PlanSchemas().Create(ctx, &v1alpha1.ServicePlanSchemas{
		ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: name}, Spec: spec,
	})
	if store.IsAlreadyExists(err) {
		_, err = s.st.PlanSchemas().UpdateWithRetry(ctx, b.Namespace, name, func(cur *v1alpha1.ServicePlanSchemas) error {
			cur.Spec = spec
			return nil
		})
	}
	return err
}

// deleteClass deletes a class record and then its schemas: never a visible class without
// schemas.
func (s *Syncer) deleteClass(ctx context.Context, namespace, name string) error {
	if err := s.st.Classes().Delete(ctx, namespace, name); err != nil && !store.IsNotFound(err) {
		return err
	}
	if err := s.st.PlanSchemas().Delete(ctx, namespace, name); err != nil && !store.IsNotFound(err) {
		return err
	}
	return nil
}

// DeleteCatalog deletes every class and schema record of broker b (for deregister).
func (s *Syncer) DeleteCatalog(ctx context.Context, b *v1alpha1.Broker) (int, error) {
	classes, listErr := s.st.Classes().List(ctx, b.Namespace, store.Filter{Broker: b.Name})
	p := newPool(s.concurrency)
	for _, c := range classes {
		p.do(func() error { return s.deleteClass(ctx, c.Namespace, c.Name) })
	}
	// Schemas whose class record is already gone (an interrupted deregister).
	schemas, err := s.st.PlanSchemas().List(ctx, b.Namespace, store.Filter{Broker: b.Name})
	listErr = errors.Join(listErr, err)
	for _, sc := range schemas {
		if !slices.ContainsFunc(classes, func(c *v1alpha1.ServiceClass) bool { return c.Name == sc.Name }) {
			p.do(func() error {
				if err := s.st.PlanSchemas().Delete(ctx, sc.Namespace, sc.Name); err != nil && !store.IsNotFound(err) {
					return err
				}
				return nil
			})
		}
	}
	return len(classes), errors.Join(listErr, p.wait())
}
