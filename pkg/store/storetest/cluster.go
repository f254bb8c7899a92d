// Package storetest provides a fake cluster for tests of code that uses pkg/store: a
// client-go fake clientset and a metadata client sharing one set of objects, behaving like
// a real API server where the store relies on it.
package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Cluster is a fake API server for ConfigMaps and Secrets. On top of client-go's fake
// clientset it does what the store relies on:
//
//   - uid, resourceVersion and creationTimestamp are set on create; an update or delete
//     with a stale resourceVersion (or another uid) fails with a conflict;
//   - deleting an object with finalizers only sets its deletionTimestamp; removing its
//     last finalizer deletes it; no finalizer can be added once it is being deleted;
//   - deleting a ConfigMap deletes the Secrets it owns (the garbage collector's job);
//   - lists honour label selectors, limit and continue (MaxPageSize forces small pages);
//   - Metadata lists ConfigMaps as PartialObjectMetadata from the same objects, with
//     the same paging;
//   - a write with DryRun set is checked (exists, conflict, preconditions) and stores
//     nothing.
//
// Other resources behave as in the plain fake clientset.
type Cluster struct {
	// Core is the clientset; add reactors to it to inject failures.
	Core *fake.Clientset
	// Metadata is the metadata client over the same objects (List, Get, Delete).
	Metadata metadata.Interface

	mu          sync.Mutex
	now         func() time.Time
	maxPageSize int
	expire      int
	rv          int64
	uid         int64
	metaLists   atomic.Int64
	metaItems   atomic.Int64
	// metaListHeld, when set (ExpectGroups), is called with each list made through
	// Metadata before it is served.
	metaListHeld func(request string)
	// onMetaList, when set (OnMetadataList), is called with each list's continue token.
	onMetaList func(continueToken string)
	// failMetaList, when set (FailMetadataLists), answers a list made through Metadata
	// with the error it returns, if any.
	failMetaList func(continueToken string) error
	dryRuns      atomic.Int64
	// metaSelectors are the label selectors of the lists made through Metadata.
	metaSelectors []string
}

// NewCluster returns a cluster holding objects. Objects without a resourceVersion get one
// on their first update. It keeps no managed fields (server-side apply, which the store
// does not use): the fake clientset's field-managed tracker builds a REST mapper of the
// whole scheme on every write, which made it most of every engine test's time.
func NewCluster(objects ...runtime.Object) *Cluster {
	//nolint:staticcheck // the plain tracker is the point: no field management.
	return newCluster(fake.NewSimpleClientset(objects...))
}

func newCluster(core *fake.Clientset) *Cluster {
	c := &Cluster{Core: core, now: time.Now, rv: 1000}
	c.Metadata = metadataClient{c}
	for _, resource := range []string{"configmaps", "secrets"} {
		c.Core.PrependReactor("create", resource, c.create)
		c.Core.PrependReactor("update", resource, c.update)
		c.Core.PrependReactor("delete", resource, c.delete)
		c.Core.PrependReactor("list", resource, c.listReaction)
	}
	return c
}

// ServeWorkloads makes the cluster serve Deployments and StatefulSets as it serves
// ConfigMaps and Secrets: a uid and a resourceVersion on create, an update of an older
// resourceVersion refused as a conflict, server-side dry runs stored nowhere. (The fake
// clientset alone stores any update, dry run or not, whatever its resourceVersion.)
func (c *Cluster) ServeWorkloads() {
	for _, resource := range []string{"deployments", "statefulsets"} {
		c.Core.PrependReactor("create", resource, c.create)
		c.Core.PrependReactor("update", resource, c.update)
		c.Core.PrependReactor("delete", resource, c.delete)
	}
}

// SetClock sets the clock for creation and deletion timestamps.
func (c *Cluster) SetClock(now func() time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}

// SetMaxPageSize caps every page of a list at n items (0: no cap beyond the request's
// limit).
func (c *Cluster) SetMaxPageSize(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxPageSize = n
}

// OnMetadataList calls f before each list made through Metadata is served, with its
// continue token: the namespace/name of the last object of the page before ("" for a
// first page).
func (c *Cluster) OnMetadataList(f func(continueToken string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onMetaList = f
}

// FailMetadataLists answers each list made through Metadata with the error f returns for
// its continue token, when f returns one (nil f: none fails).
func (c *Cluster) FailMetadataLists(f func(continueToken string) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failMetaList = f
}

// ExpireContinueTokens makes the next n list requests that carry a continue token fail
// with 410 Gone (ResourceExpired), as when the list's snapshot was compacted away.
func (c *Cluster) ExpireContinueTokens(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire = n
}

// MetadataLists counts the list requests made through Metadata.
func (c *Cluster) MetadataLists() int { return int(c.metaLists.Load()) }

// MetadataSelectors are the label selectors of the lists made through Metadata so far,
// in order.
func (c *Cluster) MetadataSelectors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.metaSelectors)
}

// MetadataItems is how many objects the lists made through Metadata have served so far.
func (c *Cluster) MetadataItems() int { return int(c.metaItems.Load()) }

// DryRuns counts the writes (create, update, delete) made as a server-side dry run:
// checked as a write would be, and stored nowhere.
func (c *Cluster) DryRuns() int { return int(c.dryRuns.Load()) }

// Store returns a store over this cluster.
func (c *Cluster) Store(opts ...store.Option) *store.Store {
	return store.New(c.Core, c.Metadata, opts...)
}

func (c *Cluster) nextRV() string {
	c.rv++
	return strconv.FormatInt(c.rv, 10)
}

func gvrOf(a clienttesting.Action) schema.GroupVersionResource { return a.GetResource() }

func kindOf(resource string) schema.GroupVersionKind {
	switch resource {
	case "secrets":
		return corev1.SchemeGroupVersion.WithKind("Secret")
	case "deployments", "statefulsets", "daemonsets":
		// Workloads, listed as metadata (completion of bind's --to).
		return schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: workloadKinds[resource]}
	case "cronjobs", "jobs":
		return schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: workloadKinds[resource]}
	}
	return corev1.SchemeGroupVersion.WithKind("ConfigMap")
}

var workloadKinds = map[string]string{
	"deployments": "Deployment", "statefulsets": "StatefulSet", "daemonsets": "DaemonSet", "cronjobs": "CronJob", "jobs": "Job",
}

func (c *Cluster) create(action clienttesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	obj := action.(clienttesting.CreateAction).GetObject().DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return true, nil, err
	}
	if m.GetName() == "" {
		return true, nil, apierrors.NewBadRequest("name is required")
	}
	c.uid++
	m.SetUID(types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", c.uid)))
	m.SetResourceVersion(c.nextRV())
	m.SetCreationTimestamp(metav1.NewTime(c.now().Truncate(time.Second)))
	m.SetDeletionTimestamp(nil)
	if a, ok := action.(clienttesting.CreateActionImpl); ok && len(a.CreateOptions.DryRun) > 0 {
		// A dry run: refused as the real create would be, stored nowhere.
		if _, _, err := c.current(gvrOf(action), action.GetNamespace(), m.GetName()); err == nil {
			return true, nil, apierrors.NewAlreadyExists(gvrOf(action).GroupResource(), m.GetName())
		}
		c.dryRuns.Add(1)
		return true, obj, nil
	}
	if err := c.Core.Tracker().Create(gvrOf(action), obj, action.GetNamespace()); err != nil {
		return true, nil, err
	}
	return true, obj, nil
}

func (c *Cluster) current(gvr schema.GroupVersionResource, ns, name string) (runtime.Object, metav1.Object, error) {
	cur, err := c.Core.Tracker().Get(gvr, ns, name)
	if err != nil {
		return nil, nil, err
	}
	m, err := meta.Accessor(cur)
	return cur, m, err
}

func conflict(gvr schema.GroupVersionResource, name, why string) error {
	return apierrors.NewConflict(gvr.GroupResource(), name, errors.New(why))
}

func (c *Cluster) update(action clienttesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gvr, ns := gvrOf(action), action.GetNamespace()
	obj := action.(clienttesting.UpdateAction).GetObject().DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return true, nil, err
	}
	_, cur, err := c.current(gvr, ns, m.GetName())
	if err != nil {
		return true, nil, err
	}
	if rv := m.GetResourceVersion(); rv != "" && rv != cur.GetResourceVersion() {
		return true, nil, conflict(gvr, m.GetName(), "the object has been modified; please apply your changes to the latest version and try again")
	}
	if uid := m.GetUID(); uid != "" && uid != cur.GetUID() {
		return true, nil, conflict(gvr, m.GetName(), "the uid does not match")
	}
	if cur.GetDeletionTimestamp() != nil {
		for _, f := range m.GetFinalizers() {
			if !slices.Contains(cur.GetFinalizers(), f) {
				return true, nil, apierrors.NewInvalid(kindOf(gvr.Resource).GroupKind(), m.GetName(), field.ErrorList{
					field.Forbidden(field.NewPath("metadata", "finalizers"), "no new finalizers can be added if the object is being deleted"),
				})
			}
		}
	}
	m.SetUID(cur.GetUID())
	m.SetCreationTimestamp(cur.GetCreationTimestamp())
	m.SetDeletionTimestamp(cur.GetDeletionTimestamp())
	m.SetResourceVersion(c.nextRV())
	if a, ok := action.(clienttesting.UpdateActionImpl); ok && len(a.UpdateOptions.DryRun) > 0 {
		c.dryRuns.Add(1)
		return true, obj, nil
	}
	if m.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) == 0 {
		return true, obj, c.remove(gvr, ns, m)
	}
	return true, obj, c.Core.Tracker().Update(gvr, obj, ns)
}

func (c *Cluster) delete(action clienttesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := action.(clienttesting.DeleteAction)
	gvr, ns := gvrOf(action), action.GetNamespace()
	obj, cur, err := c.current(gvr, ns, a.GetName())
	if err != nil {
		return true, nil, err
	}
	if p := a.GetDeleteOptions().Preconditions; p != nil {
		if p.UID != nil && *p.UID != cur.GetUID() {
			return true, nil, conflict(gvr, a.GetName(), "Precondition failed: UID in precondition does not match")
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != cur.GetResourceVersion() {
			return true, nil, conflict(gvr, a.GetName(), "Precondition failed: ResourceVersion in precondition does not match")
		}
	}
	if len(a.GetDeleteOptions().DryRun) > 0 {
		c.dryRuns.Add(1)
		return true, obj, nil
	}
	if len(cur.GetFinalizers()) > 0 {
		if cur.GetDeletionTimestamp() == nil {
			obj = obj.DeepCopyObject()
			m, _ := meta.Accessor(obj)
			now := metav1.NewTime(c.now().Truncate(time.Second))
			m.SetDeletionTimestamp(&now)
			m.SetResourceVersion(c.nextRV())
			if err := c.Core.Tracker().Update(gvr, obj, ns); err != nil {
				return true, nil, err
			}
		}
		return true, obj, nil
	}
	return true, obj, c.remove(gvr, ns, cur)
}

// remove deletes an object for good and, for a ConfigMap, the Secrets it owns.
func (c *Cluster) remove(gvr schema.GroupVersionResource, ns string, m metav1.Object) error {
	if err := c.Core.Tracker().Delete(gvr, ns, m.GetName()); err != nil {
		return err
	}
	if gvr.Resource != "configmaps" {
		return nil
	}
	secretsGVR := corev1.SchemeGroupVersion.WithResource("secrets")
	list, err := c.Core.Tracker().List(secretsGVR, kindOf("secrets"), ns)
	if err != nil {
		return err
	}
	for _, s := range list.(*corev1.SecretList).Items {
		for _, ref := range s.OwnerReferences {
			if ref.UID == m.GetUID() {
				if err := c.Core.Tracker().Delete(secretsGVR, ns, s.Name); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

func (c *Cluster) listReaction(action clienttesting.Action) (bool, runtime.Object, error) {
	impl, ok := action.(clienttesting.ListActionImpl)
	if !ok {
		return false, nil, nil
	}
	obj, err := c.list(gvrOf(action), action.GetNamespace(), impl.ListOptions)
	return true, obj, err
}

// list serves one page of a list, continuing after the namespace/name in the continue
// token.
func (c *Cluster) list(gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if opts.Continue != "" && c.expire > 0 {
		c.expire--
		return nil, apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result.")
	}
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	obj, err := c.Core.Tracker().List(gvr, kindOf(gvr.Resource), ns)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, err
	}
	key := func(o runtime.Object) string {
		m, _ := meta.Accessor(o)
		return m.GetNamespace() + "/" + m.GetName()
	}
	items = slices.DeleteFunc(items, func(o runtime.Object) bool {
		m, _ := meta.Accessor(o)
		return !sel.Matches(labels.Set(m.GetLabels())) || (opts.Continue != "" && key(o) <= opts.Continue)
	})
	slices.SortFunc(items, func(a, b runtime.Object) int { return cmp.Compare(key(a), key(b)) })
	limit := int(opts.Limit)
	if c.maxPageSize > 0 && (limit == 0 || limit > c.maxPageSize) {
		limit = c.maxPageSize
	}
	next := ""
	if limit > 0 && len(items) > limit {
		items = items[:limit]
		next = key(items[limit-1])
	}
	if err := meta.SetList(obj, items); err != nil {
		return nil, err
	}
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		return nil, err
	}
	lm.SetContinue(next)
	lm.SetResourceVersion(strconv.FormatInt(c.rv, 10))
	return obj, nil
}

// metadataClient serves PartialObjectMetadata from the cluster's objects.
type metadataClient struct{ c *Cluster }

// Resource returns the client for one resource; only configmaps are listed.
func (m metadataClient) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return metadataResource{c: m.c, gvr: gvr}
}

type metadataResource struct {
	c   *Cluster
	gvr schema.GroupVersionResource
	ns  string
}

var errUnsupported = errors.New("storetest: not supported by the fake metadata client")

// Namespace scopes the client to namespace ns.
func (r metadataResource) Namespace(ns string) metadata.ResourceInterface {
	r.ns = ns
	return r
}

func partial(o runtime.Object, kind schema.GroupVersionKind) (*metav1.PartialObjectMetadata, error) {
	m, ok := o.(metav1.ObjectMetaAccessor)
	if !ok {
		return nil, fmt.Errorf("storetest: %T has no ObjectMeta", o)
	}
	p := &metav1.PartialObjectMetadata{}
	p.SetGroupVersionKind(kind)
	p.ObjectMeta = *m.GetObjectMeta().(*metav1.ObjectMeta).DeepCopy()
	return p, nil
}

// List lists objects as metadata, with the cluster's paging.
func (r metadataResource) List(_ context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	r.c.metaLists.Add(1)
	r.c.mu.Lock()
	held, on, fail := r.c.metaListHeld, r.c.onMetaList, r.c.failMetaList
	r.c.metaSelectors = append(r.c.metaSelectors, opts.LabelSelector)
	r.c.mu.Unlock()
	if held != nil {
		held(MetadataList + " " + r.gvr.Resource)
	}
	if on != nil {
		on(opts.Continue)
	}
	if fail != nil {
		if err := fail(opts.Continue); err != nil {
			return nil, err
		}
	}
	obj, err := r.c.list(r.gvr, r.ns, opts)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, err
	}
	r.c.metaItems.Add(int64(len(items)))
	lm, _ := meta.ListAccessor(obj)
	out := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{Continue: lm.GetContinue(), ResourceVersion: lm.GetResourceVersion()}}
	for _, o := range items {
		p, err := partial(o, kindOf(r.gvr.Resource))
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, *p)
	}
	return out, nil
}

// Get reads one object as metadata.
func (r metadataResource) Get(_ context.Context, name string, _ metav1.GetOptions, _ ...string) (*metav1.PartialObjectMetadata, error) {
	o, err := r.c.Core.Tracker().Get(r.gvr, r.ns, name)
	if err != nil {
		return nil, err
	}
	return partial(o, kindOf(r.gvr.Resource))
}

// Delete deletes an object, honouring finalizers.
func (r metadataResource) Delete(ctx context.Context, name string, opts metav1.DeleteOptions, _ ...string) error {
	_, _, err := r.c.delete(clienttesting.NewDeleteActionWithOptions(r.gvr, r.ns, name, opts))
	return err
}

// DeleteCollection is not supported.
func (r metadataResource) DeleteCollection(context.Context, metav1.DeleteOptions, metav1.ListOptions) error {
	return errUnsupported
}

// Watch is not supported.
func (r metadataResource) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, errUnsupported
}

// Patch is not supported.
func (r metadataResource) Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*metav1.PartialObjectMetadata, error) {
	return nil, errUnsupported
}
