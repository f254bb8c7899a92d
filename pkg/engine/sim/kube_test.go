package sim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// What Kubernetes' own controllers do to the records, besides the processes:
//
//   - -sim.gc: the garbage collector deletes a ConfigMap or Secret whose owner is gone,
//     some time (up to 30 s) after the owner went, not at once; and users delete
//     records' ConfigMaps with kubectl, in the background or with
//     --cascade=foreground (the owner gets the foregroundDeletion finalizer, the
//     garbage collector deletes its dependents first, then removes that finalizer).
//   - -sim.nsdelete: one namespace (dev, team-b or the tenant's) is deleted at a step of
//     the seed, in the namespace controller's order: the namespace is Terminating at
//     once, and no object can be created in it from then on; the controller deletes
//     every ConfigMap and Secret in it, again and again (objects with finalizers wait
//     for them), and the namespace goes once nothing is left in it. Once the faults
//     stopped and reconcile ran until nothing was pending, the namespace must be gone
//     (dev's or team-b's: the tenant can keep her own from going without the engine).
//
// The fake API server deletes the Secrets a ConfigMap owns at once when it goes; the
// garbage collector here adds the lag for the id claims (ConfigMaps a record's
// ConfigMap owns) and every other dependent.

var (
	gcLag    = flag.Bool("sim.gc", false, "let the garbage collector delete dependents with a lag, and users delete records' ConfigMaps with kubectl (in the background or --cascade=foreground)")
	nsDelete = flag.Bool("sim.nsdelete", false, "delete one namespace during the seed, in the namespace controller's order")
)

const foregroundDeletion = metav1.FinalizerDeleteDependents

// kubeState is what the simulated controllers keep.
type kubeState struct {
	// orphans: when each dependent ("namespace/kind/name") was first seen without its
	// owner, and when the garbage collector deletes it.
	orphans map[string]time.Time
	// terminating: the namespace being deleted ("" none); deleteAt: the step it is
	// deleted at; gone: it was deleted for good.
	terminating string
	deleteAt    int
	gone        bool
	// writes counts the writes the API server was asked for (any verb but get, list
	// and watch); scanned is that count when the garbage collector last looked, and
	// scannedOnce says it did (see garbageCollect).
	writes      atomic.Int64
	scanned     int64
	scannedOnce bool
}

func (w *world) setupKube() {
	w.kube.orphans = map[string]time.Time{}
	w.cluster.Core.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			w.kube.writes.Add(1)
		}
		return false, nil, nil
	})
	if *nsDelete {
		w.kube.deleteAt = 10 + w.rng.IntN(*steps)
	}
}

// kubeStep is what the controllers do in one step of the simulation (all: without lag,
// once the faults stopped).
func (w *world) kubeStep(all bool) {
	if *nsDelete && w.kube.terminating == "" && w.steps >= w.kube.deleteAt && w.faults {
		w.deleteNamespace([]string{"dev", "team-b", "t"}[w.rng.IntN(3)])
	}
	if ns := w.kube.terminating; ns != "" && !w.kube.gone {
		w.namespaceController(ns)
	}
	if *gcLag && w.faults && w.chance(3) {
		w.kubectlDelete()
	}
	// With -sim.upshare too: a copy of an instance's changed credentials, listed before
	// a binding went, writes its Secret after it went, owned by the binding's gone
	// ConfigMap; the garbage collector deletes it, as in a cluster.
	if *gcLag || *upShare {
		w.garbageCollect(all)
	}
}

// terminating reports whether namespace ns is being deleted: the API server refuses to
// create anything in it.
func (w *world) terminatingNamespace(ns string) bool {
	return ns != "" && ns == w.kube.terminating
}

func (w *world) deleteNamespace(ns string) {
	ctx := context.Background()
	nss := w.cluster.Core.CoreV1().Namespaces()
	n, err := nss.Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		panic(err)
	}
	now := metav1.NewTime(w.t)
	n.DeletionTimestamp, n.Status.Phase = &now, corev1.NamespaceTerminating
	if _, err := nss.Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		panic(err)
	}
	w.kube.terminating = ns
	w.logf("kube           namespace %s deleted: Terminating", ns)
}

// namespaceController deletes everything in namespace ns, and the namespace once nothing
// is left.
func (w *world) namespaceController(ns string) {
	ctx := context.Background()
	core := w.cluster.Core.CoreV1()
	left := 0
	cms, err := core.ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, cm := range cms.Items {
		left++
		if cm.DeletionTimestamp == nil {
			w.kubeDelete("configmaps", ns, cm.Name, metav1.DeletePropagationBackground)
		}
	}
	ss, err := core.Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, s := range ss.Items {
		left++
		if s.DeletionTimestamp == nil {
			w.kubeDelete("secrets", ns, s.Name, metav1.DeletePropagationBackground)
		}
	}
	left += w.deleteWorkloads(ns) // workloads_test.go
	if left == 0 {
		if err := core.Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			panic(err)
		}
		w.kube.gone = true
		w.logf("kube           namespace %s is gone", ns)
	}
}

// kubectlDelete is a user deleting a record's ConfigMap with kubectl (the engine
// finishes the deletion), in the background or with --cascade=foreground.
func (w *world) kubectlDelete() {
	ctx := context.Background()
	var names []string
	for _, ns := range []string{"dev", "team-b"} {
		cms, err := w.cluster.Core.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: store.LabelKind})
		if err != nil {
			panic(err)
		}
		for _, cm := range cms.Items {
			if cm.DeletionTimestamp == nil && !strings.HasPrefix(cm.Name, "catalog-idclaim-") {
				names = append(names, ns+"/"+cm.Name)
			}
		}
	}
	if len(names) == 0 {
		return
	}
	slices.Sort(names)
	ns, name, _ := strings.Cut(names[w.rng.IntN(len(names))], "/")
	how := metav1.DeletePropagationBackground
	if w.rng.IntN(2) == 0 {
		how = metav1.DeletePropagationForeground
	}
	w.kubeDelete("configmaps", ns, name, how)
}

// kubeDelete deletes an object as the API server does for a controller or kubectl:
// --cascade=foreground adds the foregroundDeletion finalizer first.
func (w *world) kubeDelete(resource, ns, name string, how metav1.DeletionPropagation) {
	ctx := context.Background()
	core := w.cluster.Core.CoreV1()
	w.wrote = true
	if resource == "configmaps" {
		w.written[ns+"/"+name] = true
	}
	if how == metav1.DeletePropagationForeground {
		cm, err := core.ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return
		}
		if !slices.Contains(cm.Finalizers, foregroundDeletion) {
			cm.Finalizers = append(cm.Finalizers, foregroundDeletion)
			if _, err := core.ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				return
			}
		}
	}
	var err error
	if resource == "configmaps" {
		err = core.ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &how})
	} else {
		err = core.Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &how})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		panic(err)
	}
	w.logf("kube           delete %s %s/%s (%s)", resource, ns, name, how)
}

// garbageCollect deletes the dependents whose owner is gone (or being deleted in the
// foreground), each some time after the collector first saw it so (at once with all),
// and removes the foregroundDeletion finalizer of owners with no dependent left.
func (w *world) garbageCollect(all bool) {
	// What it finds depends only on the cluster's objects and on the orphans it saw:
	// with no write since it last looked and no orphan due, it would find and do
	// nothing, so it does not list everything again (the lists are most of the
	// simulation's time in the worlds that collect).
	writes := w.kube.writes.Load()
	if !all && w.kube.scannedOnce && writes == w.kube.scanned && !w.orphanDue() {
		return
	}
	w.kube.scanned, w.kube.scannedOnce = writes, true
	ctx := context.Background()
	core := w.cluster.Core.CoreV1()
	for _, ns := range []string{"dev", "team-b", "t"} {
		cms, err := core.ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			panic(err)
		}
		owners := map[types.UID]*corev1.ConfigMap{}
		for i := range cms.Items {
			owners[cms.Items[i].UID] = &cms.Items[i]
		}
		dependents := map[types.UID]int{}
		collect := func(resource, name string, refs []metav1.OwnerReference) {
			for _, ref := range refs {
				o, ok := owners[ref.UID]
				if ok {
					dependents[ref.UID]++
				}
				if ok && !(o.DeletionTimestamp != nil && slices.Contains(o.Finalizers, foregroundDeletion)) {
					continue
				}
				if !ok && w.svcatOwner(ref.UID) {
					continue // an owner of svcat's, which is there (migrate_test.go)
				}
				key := ns + "/" + resource + "/" + name
				at, seen := w.kube.orphans[key]
				if !seen {
					at = w.t.Add(time.Duration(w.rng.IntN(30)) * time.Second)
					w.kube.orphans[key] = at
				}
				if all || !w.t.Before(at) {
					delete(w.kube.orphans, key)
					w.kubeDelete(resource, ns, name, metav1.DeletePropagationBackground)
				}
				return
			}
		}
		for _, cm := range cms.Items {
			collect("configmaps", cm.Name, cm.OwnerReferences)
		}
		ss, err := core.Secrets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			panic(err)
		}
		for _, s := range ss.Items {
			collect("secrets", s.Name, s.OwnerReferences)
		}
		for _, cm := range cms.Items {
			if cm.DeletionTimestamp == nil || !slices.Contains(cm.Finalizers, foregroundDeletion) || dependents[cm.UID] > 0 {
				continue
			}
			cur, err := core.ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
			if err != nil || cur.UID != cm.UID {
				continue
			}
			cur.Finalizers = slices.DeleteFunc(cur.Finalizers, func(f string) bool { return f == foregroundDeletion })
			w.wrote = true
			w.written[ns+"/"+cm.Name] = true
			if _, err := core.ConfigMaps(ns).Update(ctx, cur, metav1.UpdateOptions{}); err == nil {
				w.logf("kube           %s/%s has no dependent left: foregroundDeletion removed", ns, cm.Name)
			}
		}
	}
}

// orphanDue reports whether the garbage collector is to delete an orphan it saw.
func (w *world) orphanDue() bool {
	for _, at := range w.kube.orphans {
		if !w.t.Before(at) {
			return true
		}
	}
	return false
}

// refuseInTerminating is the API server refusing to create an object in a namespace
// being deleted. Once the namespace is gone it refuses no more: a create admitted before
// the deletion that lands after it makes the namespace's content anew (the model's own
// processes create there again too, creatableIn), and the engine's requests that follow
// it (the Secret of a binding whose record so landed) are not refused as if the
// namespace were still being deleted.
func (w *world) refuseInTerminating(verb string, gr schema.GroupResource, ns, name string) error {
	if verb != "create" || w.creatableIn(ns) {
		return nil
	}
	return apierrors.NewForbidden(gr, name, errors.New(fmt.Sprintf("sim: unable to create new content in namespace %s because it is being terminated", ns)))
}

// checkNamespaceGone is checked at quiescence: a namespace deleted during the seed is
// gone, nothing of it left. The tenant's is not checked: she may put any finalizer on
// her own ConfigMaps, and keep her namespace from going without the engine.
func (w *world) checkNamespaceGone() {
	ns := w.kube.terminating
	if ns == "" || ns == "t" || w.kube.gone {
		return
	}
	cms, err := w.cluster.Core.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	if w.stalledMigrationIn(ns) { // migrate_unverified_test.go
		return
	}
	var left []string
	lost := 0
	for _, cm := range cms.Items {
		left = append(left, fmt.Sprintf("%s (finalizers %v)", cm.Name, cm.Finalizers))
		if w.lostInstanceRecord(ns, cm.Name) {
			lost++
		}
	}
	if lost == len(cms.Items) {
		// Only instances whose broker lied about them are left: their deletion waits
		// on calls the broker answers 404 for ever, as checkFinal lets them wait.
		return
	}
	w.fail("namespace %s was deleted and never went: left in it %s", ns, strings.Join(left, ", "))
}

// lostInstanceRecord reports whether ConfigMap ns/name is the record of an instance
// lost to a rogue broker's answers (lostByRogue, listed_test.go): its deletion cannot
// end. Seed 140 of -sim.aslisted=1 -sim.listed=1 -sim.rogue -sim.asyncbind -sim.gc
// -sim.nsdelete: a provision answered 200 and not carried out, then an update that
// timed out; the deletion re-sends the update to learn its outcome, answered 404 for
// ever, and dev never goes.
func (w *world) lostInstanceRecord(ns, name string) bool {
	inst, ok := strings.CutPrefix(name, store.ConfigMapName(v1alpha1.KindServiceInstance, ""))
	if !ok || inst == "" {
		return false
	}
	x, err := w.checker.Instances().Get(context.Background(), ns, inst)
	return err == nil && w.lostByRogue(x)
}
