package store

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/retry"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// DefaultPageSize is how many ConfigMaps a list asks for per page.
const DefaultPageSize = 500

// DefaultMetaPageSize is the most records a page of a metadata-only list holds
// (ListWork, ListIDUsersIn; a list of every record: DefaultFullPassPageSize):
// docs/reconcile.md "The first pass" has the measures it was chosen by.
const DefaultMetaPageSize = 500

// DefaultFullPassPageSize is the most records a page of a metadata-only list of every
// record holds (a full pass: ListPendingWithIDs): the API server's CPU for such a list is
// about half that of pages of 500, for about 14 MiB more in flight, which reconcile's
// memory target has room for since its index shrank (docs/reconcile.md, "Run 4").
const DefaultFullPassPageSize = 2000

// Store reads and writes records. It holds no state of its own beyond its clients and is
// safe for concurrent use.
type Store struct {
	core     kubernetes.Interface
	meta     metadata.Interface
	now      func() time.Time
	pageSize int64
	// metaPageSize bounds the pages of metadata-only lists; fullPassPageSize, those of
	// the lists of every record.
	metaPageSize, fullPassPageSize int64

	identity   func(context.Context) (*Identity, error)
	trustToken func(context.Context) (string, error)
	specs      specMemory

	// claims judge claims by what this process saw (claimclock.go); claimsSeenEarlier
	// is their test knob.
	claims            *Claims
	claimsSeenEarlier time.Duration
	// monotonic, when set, is the claims' monotonic clock (WithMonotonicClock).
	monotonic func() time.Duration
	// processes, when set, are what the claims know of processes (WithProcesses).
	processes *ProcessTable
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock used for claims (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithClaimsSeenEarlier makes the store count another holder's claim whose stamp its
// clock has passed as seen d earlier than it first saw it (a test knob: a process whose
// clock is set that far ahead judges such claims as if it had been watching them that
// long; claims stamped by processes whose clocks are set alike are judged as usual).
func WithClaimsSeenEarlier(d time.Duration) Option {
	return func(s *Store) { s.claimsSeenEarlier = d }
}

// WithMonotonicClock sets the monotonic clock claims are timed by (Claims): the time
// elapsed since some start, which no setting of the wall clock moves. By default it is
// the clock WithClock set, measured from the store's creation (with time.Now, Go's
// monotonic reading); a clock that WithClock makes jump (a simulated process whose wall
// clock is set) needs one of its own.
func WithMonotonicClock(elapsed func() time.Duration) Option {
	return func(s *Store) { s.monotonic = elapsed }
}

// WithProcesses sets what the store's claims know of processes: the process they name as
// their writer, and which processes run beside it, by which a claim of another holder is
// judged abandoned (Claims.Abandoned). By default it is SystemProcesses, this process as
// the system tells it; a simulated process, one of many in one process, needs its own.
func WithProcesses(t ProcessTable) Option {
	return func(s *Store) { s.processes = &t }
}

// Claims is how this store's process judges claims (claimclock.go). Its monotonic clock
// is the store's clock measured from the store's creation (with time.Now, Go's monotonic
// reading, which no setting of the wall clock moves).
func (s *Store) Claims() *Claims { return s.claims }

// WithPageSize sets how many ConfigMaps a list asks for per page (default
// DefaultPageSize), metadata-only lists included.
func WithPageSize(n int64) Option {
	return func(s *Store) { s.pageSize, s.metaPageSize, s.fullPassPageSize = n, n, n }
}

// WithMetaPageSize sets the most records a page of a metadata-only list holds, lists of
// every record included (defaults DefaultMetaPageSize and DefaultFullPassPageSize).
func WithMetaPageSize(n int64) Option {
	return func(s *Store) { s.metaPageSize, s.fullPassPageSize = n, n }
}

// New returns a Store using core for ConfigMaps and Secrets and meta for metadata-only
// lists (ListPending; meta may be nil if ListPending is not used).
func New(core kubernetes.Interface, meta metadata.Interface, opts ...Option) *Store {
	s := &Store{core: core, meta: meta, now: time.Now, pageSize: DefaultPageSize, metaPageSize: DefaultMetaPageSize,
		fullPassPageSize: DefaultFullPassPageSize}
	for _, o := range opts {
		o(s)
	}
	epoch := s.now()
	monotonic := s.monotonic
	if monotonic == nil {
		monotonic = func() time.Duration { return s.now().Sub(epoch) }
	}
	processes := SystemProcesses()
	if s.processes != nil {
		processes = *s.processes
	}
	s.claims = newClaims(monotonic, s.now, s.claimsSeenEarlier, processes)
	return s
}

// Records reads and writes the records of one kind. Get one from Store.Brokers,
// Store.Classes, Store.PlanSchemas, Store.Instances or Store.Bindings.
type Records[T v1alpha1.Record] struct {
	s *Store
	k kind[T]
}

// Brokers reads and writes Broker records.
func (s *Store) Brokers() Records[*v1alpha1.Broker] {
	return Records[*v1alpha1.Broker]{s, brokerKind()}
}

// Classes reads and writes ServiceClass records.
func (s *Store) Classes() Records[*v1alpha1.ServiceClass] {
	return Records[*v1alpha1.ServiceClass]{s, classKind()}
}

// PlanSchemas reads and writes ServicePlanSchemas records.
func (s *Store) PlanSchemas() Records[*v1alpha1.ServicePlanSchemas] {
	return Records[*v1alpha1.ServicePlanSchemas]{s, schemasKind()}
}

// Instances reads and writes ServiceInstance records.
func (s *Store) Instances() Records[*v1alpha1.ServiceInstance] {
	return Records[*v1alpha1.ServiceInstance]{s, instanceKind()}
}

// Bindings reads and writes ServiceBinding records.
func (s *Store) Bindings() Records[*v1alpha1.ServiceBinding] {
	return Records[*v1alpha1.ServiceBinding]{s, bindingKind()}
}

// Access reads and writes the CatalogAccess record (access rules).
func (s *Store) Access() Records[*v1alpha1.CatalogAccess] {
	return Records[*v1alpha1.CatalogAccess]{s, accessKind()}
}

// Kind is the record kind these Records read and write.
func (r Records[T]) Kind() string { return r.k.name }

func (r Records[T]) configMaps(namespace string) typedcorev1.ConfigMapInterface {
	return r.s.core.CoreV1().ConfigMaps(namespace)
}

// Create stores a new record in obj's namespace, with generation 1 and, for instances,
// bindings and namespace-scoped brokers (HoldsInstances), Finalizer. It returns the record as stored (uid, resourceVersion, ...).
func (r Records[T]) Create(ctx context.Context, obj T) (T, error) {
	var zero T
	if err := validateName("create", r.k.name, obj.GetNamespace(), obj.GetName()); err != nil {
		return zero, err
	}
	cm, err := encode(r.k, obj, true)
	if err != nil {
		return zero, err
	}
	cm.ResourceVersion, cm.UID = "", ""
	intended, err := r.s.prepareWrite(ctx, cm, true)
	if err != nil {
		return zero, err
	}
	created, err := r.configMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{DryRun: dryRun(ctx)})
	if err != nil {
		return zero, apiError("create", r.k.name, obj.GetNamespace(), obj.GetName(), err)
	}
	if intended != "" && !IsDryRun(ctx) {
		r.s.specs.intend(created.UID, intended)
	}
	return decoded(r.s, r.k, created)
}

// Get reads the record namespace/name.
func (r Records[T]) Get(ctx context.Context, namespace, name string) (T, error) {
	var zero T
	if err := validateName("get", r.k.name, namespace, name); err != nil {
		return zero, err
	}
	cm, err := r.configMaps(namespace).Get(ctx, ConfigMapName(r.k.name, name), metav1.GetOptions{})
	if err != nil {
		return zero, apiError("get", r.k.name, namespace, name, err)
	}
	return decoded(r.s, r.k, cm)
}

// Update writes obj, guarded by its resourceVersion: if the record changed since obj was
// read, it returns a Conflict error and writes nothing. It returns the record as stored.
// The spec, status, labels, annotations, finalizers and owner references are obj's; the
// derived labels and annotations are recomputed.
func (r Records[T]) Update(ctx context.Context, obj T) (T, error) {
	var zero T
	if obj.GetResourceVersion() == "" {
		return zero, &Error{Reason: ReasonInvalid, Op: "update", Kind: r.k.name, Namespace: obj.GetNamespace(), Name: obj.GetName(),
			Detail: "it has no resourceVersion; read it from the store, change it, then update it"}
	}
	cm, err := encode(r.k, obj, false)
	if err != nil {
		return zero, err
	}
	if obj.GetLabels()[LabelManagedBy] != ManagedBy && !isIntent(ctx) {
		// A ConfigMap made a record by hand, without the label the trust policy selects
		// on: only its author may add the label (the policy refuses anyone else), so the
		// engine's status writes, recording that its author cannot be verified, leave it
		// off.
		delete(cm.Labels, LabelManagedBy)
	}
	if !isIntent(ctx) {
		if err := r.recall(ctx, obj); err != nil {
			return zero, err
		}
	}
	intended, err := r.s.prepareWrite(ctx, cm, false)
	if err != nil {
		return zero, err
	}
	start := r.s.claims.Now()
	updated, err := r.configMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{DryRun: dryRun(ctx)})
	if err != nil {
		return zero, apiError("update", r.k.name, obj.GetNamespace(), obj.GetName(), err)
	}
	if intended != "" && !IsDryRun(ctx) {
		r.s.specs.intend(updated.UID, intended)
	}
	if !IsDryRun(ctx) {
		// A claim written here is timed from the start of the write (claimclock.go).
		r.s.claims.wrote(updated, start)
	}
	return decoded(r.s, r.k, updated)
}

// UpdateWithRetry reads the record, applies mutate and writes it; on a conflict it reads
// the record again and re-applies mutate, a few times. Use it only for changes that are
// right on whatever version of the record is current (a finalizer, a label, a spec edit
// by the user), never to persist the outcome of a broker call decided on an older
// version. If mutate returns an error, nothing is written and that error is returned. If
// mutate changes nothing, nothing is written.
func (r Records[T]) UpdateWithRetry(ctx context.Context, namespace, name string, mutate func(T) error) (T, error) {
	return r.updateWithRetry(ctx, namespace, name, "", mutate)
}

// updateWithRetry is UpdateWithRetry, refusing to touch a record whose uid is not uid (a
// record deleted and created again under the same name) when uid is set.
func (r Records[T]) updateWithRetry(ctx context.Context, namespace, name string, uid types.UID, mutate func(T) error) (T, error) {
	var result T
	err := retry.OnError(retry.DefaultRetry, IsConflict, func() error {
		current, err := r.Get(ctx, namespace, name)
		if err != nil {
			return err
		}
		if uid != "" && current.GetUID() != uid {
			return &Error{Reason: ReasonNotFound, Op: "update", Kind: r.k.name, Namespace: namespace, Name: name}
		}
		before, err := encode(r.k, current, false)
		if err != nil {
			return err
		}
		if err := mutate(current); err != nil {
			return err
		}
		after, err := encode(r.k, current, false)
		if err != nil {
			return err
		}
		if sameConfigMap(before, after) {
			result = current
			return nil
		}
		result, err = r.Update(ctx, current)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return result, nil
}

func sameConfigMap(a, b *corev1.ConfigMap) bool {
	return maps.Equal(a.Data, b.Data) && maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) &&
		slices.Equal(a.Finalizers, b.Finalizers) && reflect.DeepEqual(a.OwnerReferences, b.OwnerReferences)
}

// Delete deletes the record namespace/name. For a record with finalizers (instances,
// bindings, namespace-scoped brokers) this only sets its deletionTimestamp: the record stays, marked for deletion,
// until the engine removes the finalizer.
func (r Records[T]) Delete(ctx context.Context, namespace, name string) error {
	if err := validateName("delete", r.k.name, namespace, name); err != nil {
		return err
	}
	err := r.configMaps(namespace).Delete(ctx, ConfigMapName(r.k.name, name), metav1.DeleteOptions{DryRun: dryRun(ctx)})
	return apiError("delete", r.k.name, namespace, name, err)
}

// AddFinalizer adds Finalizer to the record obj names, re-reading it on conflict (the
// record must still be the one obj was read from: same uid).
func (r Records[T]) AddFinalizer(ctx context.Context, obj T) (T, error) {
	return r.updateWithRetry(ctx, obj.GetNamespace(), obj.GetName(), obj.GetUID(), func(cur T) error {
		if !slices.Contains(cur.GetFinalizers(), Finalizer) {
			cur.SetFinalizers(append(cur.GetFinalizers(), Finalizer))
		}
		return nil
	})
}

// RemoveFinalizer removes Finalizer from the record obj names, re-reading it on conflict
// (the record must still be the one obj was read from: same uid). Once no finalizer is
// left on a record marked for deletion, the API server deletes it. A record already gone
// (or replaced by a new one of the same name) gives a NotFound error.
func (r Records[T]) RemoveFinalizer(ctx context.Context, obj T) (T, error) {
	out, err := r.removeFinalizer(ctx, obj)
	if err == nil && out.GetDeletionTimestamp() != nil || IsNotFound(err) {
		// The record is released: its id claims go too (reconcile releases those
		// this cannot: ReleaseStrayIDClaim).
		_ = r.s.releaseIDClaims(ctx, r.k.name, obj)
	}
	return out, err
}

func (r Records[T]) removeFinalizer(ctx context.Context, obj T) (T, error) {
	// A record being deleted whose only finalizer is the engine's, as last read or
	// written: the write goes out at once, guarded by its resourceVersion, and deletes
	// it. A change by anyone since makes it conflict, and the record is then read as it
	// is now.
	if obj.GetDeletionTimestamp() != nil && obj.GetResourceVersion() != "" && slices.Equal(obj.GetFinalizers(), []string{Finalizer}) {
		x := obj.DeepCopyObject().(T)
		x.SetFinalizers(nil)
		if out, err := r.Update(ctx, x); !IsConflict(err) {
			return out, err
		}
	}
	return r.updateWithRetry(ctx, obj.GetNamespace(), obj.GetName(), obj.GetUID(), func(cur T) error {
		cur.SetFinalizers(slices.DeleteFunc(cur.GetFinalizers(), func(f string) bool { return f == Finalizer }))
		return nil
	})
}

// WatchChange watches the ConfigMap of record namespace/name from resourceVersion rv
// (field selector metadata.name) and returns a channel that receives true when it
// changes or goes, or false when the watch cannot be made or breaks (the caller then
// polls). It stops when ctx ends.
func (r Records[T]) WatchChange(ctx context.Context, namespace, name, rv string) <-chan bool {
	out := make(chan bool, 1)
	sel := fields.OneTermEqualSelector("metadata.name", ConfigMapName(r.k.name, name)).String()
	w, err := r.configMaps(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
	if err != nil {
		out <- false
		return out
	}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				switch {
				case !ok || ev.Type == watch.Error:
					out <- false
					return
				case ev.Type == watch.Bookmark:
					continue
				}
				out <- true
				return
			}
		}
	}()
	return out
}
