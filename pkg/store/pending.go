package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// configMapsResource is the resource the metadata client lists.
func configMapsResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
}

// WorkItem is a record with work to do, as ListPending sees it: metadata only.
type WorkItem struct {
	// Kind is the record kind (v1alpha1.KindServiceInstance, ...).
	Kind            string
	Namespace, Name string
	UID             types.UID
	ResourceVersion string
	// Pending: the record is labelled pending.
	Pending bool
	// Deleting: the record carries a deletionTimestamp (deleted by the CLI, by "kubectl
	// delete", or by its namespace being deleted).
	Deleting bool
	// Lease is the record's claim, if it has a readable one (it may have expired).
	Lease *Lease
}

// ListPending lists the records of namespace (all namespaces when namespace is "") that
// have work to do: those labelled pending or carrying a deletionTimestamp. It reads
// metadata only (PartialObjectMetadata), page by page, and only of the kinds that can have
// work (brokers, instances, bindings); read the items in full with Get. A deletion sets
// only deletionTimestamp, not the pending label, which is why this is one metadata list
// and not a label-selected list of full records.
func (s *Store) ListPending(ctx context.Context, namespace string) ([]WorkItem, error) {
	items, _, err := s.listPending(ctx, namespace, false)
	return items, err
}

// ListPendingWithIDs is ListPending, and also indexes the OSB id labels (IDLabel) of
// every instance and binding the same list read, so that the checks of WithExternalID
// for these records need no list of their own (IDIndex.Lookup).
func (s *Store) ListPendingWithIDs(ctx context.Context, namespace string) ([]WorkItem, *IDIndex, error) {
	return s.listPending(ctx, namespace, true)
}

func (s *Store) listPending(ctx context.Context, namespace string, withIDs bool) ([]WorkItem, *IDIndex, error) {
	var items []WorkItem
	var ids *IDIndex
	reset := func() {
		items = nil
		if withIDs {
			ids = newIDIndex(namespace)
		}
	}
	reset()
	err := s.eachRecordMeta(ctx, namespace, reset, func(m *metav1.ObjectMeta) {
		if n := metadataBytes(m); n > MaxRecordMetadataBytes {
			if withIDs {
				ids.addOversized(m, n)
			}
			return
		}
		if item, ok := workItem(m); ok {
			items = append(items, item)
		}
		if withIDs {
			ids.add(m)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return items, ids, nil
}

// eachRecordMeta calls visit with the metadata of every record (broker, instance,
// binding) of namespace ("" for all), and of every id claim (see IDClaimName), from one
// consistent metadata-only list, page by page. When the list has to start over (its continue token expired), reset is called
// first.
func (s *Store) eachRecordMeta(ctx context.Context, namespace string, reset func(), visit func(*metav1.ObjectMeta)) error {
	if s.meta == nil {
		return errors.New("store: listing records' metadata needs a metadata client (store.New got nil)")
	}
	req, err := labels.NewRequirement(LabelKind, selection.In,
		[]string{v1alpha1.KindBroker, v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding,
			idClaimKind(v1alpha1.KindServiceInstance), idClaimKind(v1alpha1.KindServiceBinding)})
	if err != nil {
		return err
	}
	return s.eachMetaPageOf(ctx, namespace, labels.NewSelector().Add(*req).String(), s.fullPassPageSize, reset, visit)
}

// eachMetaPage visits the metadata of the ConfigMaps of namespace ("" for all) that match
// selector, a page at a time (pages sized by the largest metadata seen); an expired
// continue token starts the list again after reset.
func (s *Store) eachMetaPage(ctx context.Context, namespace, selector string, reset func(), visit func(*metav1.ObjectMeta)) error {
	return s.eachMetaPageOf(ctx, namespace, selector, s.metaPageSize, reset, visit)
}

// eachMetaPageOf is eachMetaPage with pages of at most pageSize records.
func (s *Store) eachMetaPageOf(ctx context.Context, namespace, selector string, pageSize int64, reset func(), visit func(*metav1.ObjectMeta)) error {
	opts := metav1.ListOptions{LabelSelector: selector, Limit: pageSize}
	if opts.Limit > 0 {
		opts.Limit = min(opts.Limit, firstMetaPage)
	}
	for {
		list, err := s.meta.Resource(configMapsResource()).Namespace(namespace).List(ctx, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" {
			reset()
			opts.Continue, opts.Limit = "", 0
			continue
		}
		if err != nil {
			return apiError("list", "", namespace, "", err)
		}
		largest := 0
		for i := range list.Items {
			largest = max(largest, metadataBytes(&list.Items[i].ObjectMeta))
			visit(&list.Items[i].ObjectMeta)
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
		if opts.Limit > 0 {
			opts.Limit = nextMetaPage(opts.Limit, pageSize, largest)
		}
	}
}

// Bounds on what the metadata of records costs a reader of every namespace (reconcile
// -A). A record's labels and annotations are free to write for anyone who may write its
// ConfigMap, and a ConfigMap may hold over a megabyte of them: without bounds, a few
// hundred such ConfigMaps named like records would make one list, and an index of their
// labels, outgrow reconcile's memory.
const (
	// MaxRecordMetadataBytes is the most a record's labels and annotations (keys and
	// values) may hold. A record over it is not read by ListPendingWithIDs: it is
	// reported (IDIndex.Oversized) and its labels are not indexed. What the engine
	// writes is a few hundred bytes, plus about 75 a label for each OSB id.
	MaxRecordMetadataBytes = 64 << 10
	// MaxIndexedIDsPerNamespace is the most OSB id labels an IDIndex keeps of one
	// namespace's records; beyond it the namespace's own id checks list instead.
	MaxIndexedIDsPerNamespace = 16384
	// firstMetaPage is the size of the first page of a metadata list, and
	// metaPageBudget what a page's metadata may hold: each next page has as many
	// records as fit the budget at the size of the largest of the page before, at most
	// twice as many as it, and at most the store's page size.
	firstMetaPage  = 8
	metaPageBudget = 8 << 20
)

// metadataBytes is what m's labels and annotations hold, keys and values.
func metadataBytes(m *metav1.ObjectMeta) int {
	n := 0
	for k, v := range m.Labels {
		n += len(k) + len(v)
	}
	for k, v := range m.Annotations {
		n += len(k) + len(v)
	}
	return n
}

// MetaPages is how many requests a metadata list of n records makes (its pages: the
// first of firstMetaPage records, each next twice as many, up to the store's metadata
// page size), records of ordinary size.
func (s *Store) MetaPages(n int) int {
	limit, pages := min(int64(firstMetaPage), max(s.metaPageSize, 1)), 1
	if s.metaPageSize <= 0 {
		return 1
	}
	for left := int64(n) - limit; left > 0; left -= limit {
		limit = nextMetaPage(limit, s.metaPageSize, 0)
		pages++
	}
	return pages
}

// nextMetaPage is the size of the page after one of size limit whose largest record's
// metadata held largest bytes.
func nextMetaPage(limit, pageSize int64, largest int) int64 {
	next := min(2*limit, pageSize)
	if largest > 0 {
		next = min(next, int64(metaPageBudget/largest))
	}
	return max(next, 1)
}

// OversizedRecord is a ConfigMap with a record kind's label and name whose labels and
// annotations hold more than MaxRecordMetadataBytes.
type OversizedRecord struct {
	Kind, Namespace, Name string
	// Bytes is what its labels and annotations hold.
	Bytes int
}

// UnverifiedCounts counts, per namespace, the records of namespace ("" for all) whose
// author stamp does not carry token, the trust policy's token now in force: written
// before it (or never stamped), their author cannot be verified. One metadata-only list.
func (s *Store) UnverifiedCounts(ctx context.Context, namespace, token string) (map[string]int, error) {
	counts := map[string]int{}
	err := s.eachRecordMeta(ctx, namespace, func() { clear(counts) }, func(m *metav1.ObjectMeta) {
		if configMapPrefix(m.Labels[LabelKind]) != "" && strings.HasPrefix(m.Name, configMapPrefix(m.Labels[LabelKind])) &&
			(m.Annotations[AnnotationAuthor] == "" || m.Annotations[AnnotationTrustToken] != token) {
			counts[m.Namespace]++
		}
	})
	return counts, err
}

// StampedCounts counts, per namespace, the records of namespace ("" for all) whose
// author stamp carries token: those that lose their verified author when that token
// is no longer the one in force (the trust policy removed, or its token created anew).
// One metadata-only list.
func (s *Store) StampedCounts(ctx context.Context, namespace, token string) (map[string]int, error) {
	counts := map[string]int{}
	if token == "" {
		return counts, nil
	}
	err := s.eachRecordMeta(ctx, namespace, func() { clear(counts) }, func(m *metav1.ObjectMeta) {
		if configMapPrefix(m.Labels[LabelKind]) != "" && strings.HasPrefix(m.Name, configMapPrefix(m.Labels[LabelKind])) &&
			m.Annotations[AnnotationAuthor] != "" && m.Annotations[AnnotationTrustToken] == token {
			counts[m.Namespace]++
		}
	})
	return counts, err
}

// workItem is the WorkItem of a record's metadata, if it has work to do.
func workItem(m *metav1.ObjectMeta) (WorkItem, bool) {
	kind := m.Labels[LabelKind]
	name, ok := strings.CutPrefix(m.Name, configMapPrefix(kind))
	if !ok || configMapPrefix(kind) == "" {
		return WorkItem{}, false
	}
	item := WorkItem{
		Kind: kind, Namespace: m.Namespace, Name: name, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Pending: m.Labels[LabelPending] == "true", Deleting: m.DeletionTimestamp != nil,
	}
	if !item.Pending && !item.Deleting {
		return WorkItem{}, false
	}
	if l, ok := LeaseOf(m); ok {
		item.Lease = &l
	}
	return item, true
}

// IDIndex is the OSB id labels of the instances and bindings one consistent list read
// (ListPendingWithIDs): which records used which ids then. It is kept small (about 150
// bytes a record, idindex.go): reconcile holds one for the records of a whole cluster,
// and the garbage collector lets the process grow to twice what it holds.
type IDIndex struct {
	// mu guards what the list adds while it is read (ListPendingWithIDsAsListed)
	// against Lookup; listing says it is, and passed are the namespaces it has read in
	// full since it started (nil: none can be answered for before the list ends).
	mu        sync.RWMutex
	listing   bool
	passed    map[string]bool
	namespace string
	// within, when not nil, are the only namespaces the index covers (ListIDUsersIn).
	within map[string]bool
	// recs are the instances and bindings the list held; byUID finds one by its uid.
	recs  idRecs
	byUID map[uidKey]uint32
	// otherUIDs are the uids that are not UUIDs (uidKey), by their key.
	otherUIDs map[uidKey]types.UID
	// names and nss hold the records' names and namespaces (each namespace once).
	names nameArena
	nss   namespaceTable
	// users: the records labelled with an id, the first in first, any more in more.
	first map[idKey]uint32
	more  map[idKey][]uint32
	// claims: when each id claim the list held was made, by namespace and name.
	claims map[types.NamespacedName]idClaim
	// indexed counts the id labels kept of each namespace's records; incomplete holds
	// the namespaces some of whose id labels were not kept (over
	// MaxIndexedIDsPerNamespace, or an oversized record's).
	indexed    map[string]int
	incomplete map[string]bool
	// oversized are the records not read for their size.
	oversized []OversizedRecord
}

// Oversized are the records whose labels and annotations the list found over
// MaxRecordMetadataBytes: neither work items nor indexed.
func (x *IDIndex) Oversized() []OversizedRecord {
	if x == nil {
		return nil
	}
	return x.oversized
}

// addOversized notes m, a record's ConfigMap whose metadata holds n bytes.
func (x *IDIndex) addOversized(m *metav1.ObjectMeta, n int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.incomplete[m.Namespace] = true
	kind := m.Labels[LabelKind]
	name, ok := strings.CutPrefix(m.Name, configMapPrefix(kind))
	if ok && configMapPrefix(kind) != "" {
		x.oversized = append(x.oversized, OversizedRecord{Kind: kind, Namespace: m.Namespace, Name: name, Bytes: n})
	}
}

// idKey is a record kind and the hash of an id, as IDLabel has it.
type idKey struct {
	binding bool
	sum     [20]byte
}

func newIDIndex(namespace string) *IDIndex {
	x := &IDIndex{namespace: namespace}
	x.init()
	return x
}

func (x *IDIndex) init() {
	x.first, x.more, x.byUID = map[idKey]uint32{}, map[idKey][]uint32{}, map[uidKey]uint32{}
	x.claims, x.indexed, x.incomplete = map[types.NamespacedName]idClaim{}, map[string]int{}, map[string]bool{}
}

// clear empties x for a list that starts over.
func (x *IDIndex) clear() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.init()
	x.recs, x.otherUIDs, x.names, x.nss, x.oversized = idRecs{}, nil, nameArena{}, namespaceTable{}, nil
	x.passed = map[string]bool{}
}

// pass notes that the list has read every record of namespace ns.
func (x *IDIndex) pass(ns string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.passed == nil {
		x.passed = map[string]bool{}
	}
	x.passed[ns] = true
}

// unordered notes that the list's records did not come in the order of their keys: no
// namespace is answered for before the list ends.
func (x *IDIndex) unordered() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.passed = nil
}

// listed notes that the list has been read in full.
func (x *IDIndex) listed() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.listing, x.passed = false, nil
}

func (x *IDIndex) add(m *metav1.ObjectMeta) {
	x.mu.Lock()
	defer x.mu.Unlock()
	kind := m.Labels[LabelKind]
	if c, ok := idClaimOf(m); ok {
		x.claims[types.NamespacedName{Namespace: m.Namespace, Name: m.Name}] = c
		return
	}
	if kind != v1alpha1.KindServiceInstance && kind != v1alpha1.KindServiceBinding {
		return
	}
	name, ok := strings.CutPrefix(m.Name, configMapPrefix(kind))
	if !ok {
		return
	}
	if len(name) > maxIndexedName {
		// No record has one (a ConfigMap's name is at most 253 bytes): the checks of
		// the namespace list.
		x.incomplete[m.Namespace] = true
		return
	}
	rec := idRec{uid: x.keepUID(m.UID), ns: x.nss.of(m.Namespace), name: x.names.add(name), nameLen: uint8(len(name)),
		created: m.CreationTimestamp.Unix()}
	if kind == v1alpha1.KindServiceBinding {
		rec.flags |= recBinding
	}
	if m.Annotations[AnnotationMigratedFrom] != "" {
		rec.flags |= recMigratedAny
		if m.DeletionTimestamp == nil {
			rec.flags |= recMigrated
		}
	}
	at := x.recs.add(rec)
	x.byUID[rec.uid] = at
	for k, v := range m.Labels {
		rest, ok := strings.CutPrefix(k, IDLabelPrefix)
		key := idKey{binding: kind == v1alpha1.KindServiceBinding}
		if !ok || v != "true" || hex.DecodedLen(len(rest)) != len(key.sum) {
			continue
		}
		if _, err := hex.Decode(key.sum[:], []byte(rest)); err != nil {
			continue
		}
		if x.indexed[m.Namespace] >= MaxIndexedIDsPerNamespace {
			x.incomplete[m.Namespace] = true
			continue
		}
		x.indexed[m.Namespace]++
		x.recs.at(at).flags |= recLabelled
		if _, taken := x.first[key]; taken {
			x.more[key] = append(x.more[key], at)
		} else {
			x.first[key] = at
		}
	}
}

// user is the IDUser of the record at position i (its claim not filled in).
func (x *IDIndex) user(i uint32) IDUser {
	r := x.recs.at(i)
	return IDUser{Namespace: x.nss.name(r.ns), Name: x.names.get(r.name, r.nameLen), UID: x.uidOf(r.uid),
		Created: metav1.Unix(r.created, 0), Migrated: r.flags&recMigratedAny != 0}
}

// listedIn is the namespace of the record with uid uid, if the list held it.
func (x *IDIndex) listedIn(uid types.UID) (string, bool) {
	i, ok := x.byUID[uidKeyOf(uid)]
	if !ok {
		return "", false
	}
	return x.nss.name(x.recs.at(i).ns), true
}

// Lookup answers WithExternalID(kind, namespace, id) for the record uid, if the index
// can: it covers namespace and it listed the record. Then every record created before it
// (the ones that could make its id someone else's) was there when the list was read, and
// every record the list did not hold was created after it, even in the same second:
// a copy of its id made since is the copy's to answer for, and the copy's own check (a
// list, which finds this record) refuses it. ok is false when the index cannot answer:
// list with WithExternalID.
func (x *IDIndex) Lookup(kind, namespace, id string, uid types.UID) (users []IDUser, ok bool) {
	if x == nil {
		return nil, false
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	// An index of one namespace answers a check of every namespace for an id bound to
	// a uid or a namespace, as an index of some namespaces does (below): only a record
	// of the checked record's own namespace, which it covers, can hold one.
	if namespace != x.namespace && (namespace != "" || !v1alpha1.IsBoundID(id)) {
		return nil, false
	}
	ns, listed := x.listedIn(uid)
	if !listed || x.incomplete[ns] {
		return nil, false
	}
	// An index of some namespaces answers only for an id bound to a uid or a
	// namespace: only a record of the checked record's own namespace, which it
	// covers, can hold one (see above).
	if x.within != nil && (!x.within[ns] || !v1alpha1.IsBoundID(id)) {
		return nil, false
	}
	// While the list is read: of the namespaces it has passed, as an index of some
	// namespaces.
	if x.listing && (!x.passed[ns] || !v1alpha1.IsBoundID(id)) {
		return nil, false
	}
	// An id bound to a uid or a namespace is a real record's only in the namespace it
	// is bound to, the record's own: other namespaces' missing labels hide no user of
	// it. Any other id may be another namespace's.
	if len(x.incomplete) > 0 && !v1alpha1.IsBoundID(id) {
		return nil, false
	}
	key := idKey{binding: kind == v1alpha1.KindServiceBinding}
	sum := sha256.Sum256([]byte(id))
	copy(key.sum[:], sum[:])
	if kind != v1alpha1.KindServiceInstance && kind != v1alpha1.KindServiceBinding {
		return nil, true
	}
	i, found := x.first[key]
	if !found {
		return nil, true
	}
	for _, i := range append([]uint32{i}, x.more[key]...) {
		user := x.user(i)
		if c, ok := x.claims[types.NamespacedName{Namespace: user.Namespace, Name: IDClaimName(kind, user.UID, id)}]; ok {
			user.Adopted, user.AdoptedVersion = c.made, c.version
		}
		users = append(users, user)
	}
	return users, true
}

// Stray is the id claims the list held whose record it did not hold (by the uid the
// claim's name says): a record released without its claims (a finalizer removed by
// hand, a process ended between the two writes), or one deleted since. Only claims
// that hold IDClaimFinalizer are stray: the garbage collector deletes the others with
// their record. ReleaseStrayIDClaim checks each against its record before it releases
// it.
func (x *IDIndex) Stray() []StrayIDClaim {
	if x == nil {
		return nil
	}
	var out []StrayIDClaim
	for key, c := range x.claims {
		if _, listed := x.listedIn(c.owner); listed || !c.held || c.ownerName == "" {
			continue
		}
		out = append(out, StrayIDClaim{Kind: c.kind, Namespace: key.Namespace, Name: key.Name, OwnerName: c.ownerName, OwnerUID: c.owner})
	}
	return out
}

// Claimed reports whether the list held the id claim of the record of kind with uid uid
// in namespace for OSB id id, and whether that claim holds IDClaimFinalizer; ok is false
// when the index cannot tell (it does not cover namespace, or did not list the record).
func (x *IDIndex) Claimed(kind, namespace string, uid types.UID, id string) (claimed, held, ok bool) {
	if x == nil || (x.namespace != "" && x.namespace != namespace) || (x.within != nil && !x.within[namespace]) {
		return false, false, false
	}
	if _, listed := x.listedIn(uid); !listed {
		return false, false, false
	}
	c, claimed := x.claims[types.NamespacedName{Namespace: namespace, Name: IDClaimName(kind, uid, id)}]
	return claimed, c.held, true
}

// UnclaimedMigrated is Unclaimed, of the records "migrate svcat" wrote
// (AnnotationMigratedFrom): one whose id claim failed when it was written. It costs the
// migrated records, not every record.
func (x *IDIndex) UnclaimedMigrated() []WorkItem {
	return x.unclaimed(recMigrated)
}

// Unclaimed is the instances and bindings the list held that carry an OSB id label and
// no id claim that holds IDClaimFinalizer: the records whose spec may name an id bound
// to nothing without a claim (the labels tell no more), oldest first.
func (x *IDIndex) Unclaimed() []WorkItem {
	return x.unclaimed(0)
}

// unclaimed is Unclaimed, of the records with every flag of only.
func (x *IDIndex) unclaimed(only uint8) []WorkItem {
	if x == nil {
		return nil
	}
	held := map[uidKey]bool{}
	for _, c := range x.claims {
		if c.held {
			held[uidKeyOf(c.owner)] = true
		}
	}
	var out []WorkItem
	var created []int64
	for i := range uint32(x.recs.n) {
		r := x.recs.at(i)
		if r.flags&recLabelled == 0 || r.flags&only != only || held[r.uid] {
			continue
		}
		kind := v1alpha1.KindServiceInstance
		if r.flags&recBinding != 0 {
			kind = v1alpha1.KindServiceBinding
		}
		u := x.user(i)
		out = append(out, WorkItem{Kind: kind, Namespace: u.Namespace, Name: u.Name, UID: u.UID})
		created = append(created, r.created)
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(created[a], created[b]), cmp.Compare(out[a].UID, out[b].UID))
	})
	sorted := make([]WorkItem, len(out))
	for i, j := range idx {
		sorted[i] = out[j]
	}
	return sorted
}
