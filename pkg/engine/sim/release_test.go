package sim

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Processes of other releases (-sim.oldrelease): the release under test is the older one
// of an upgrade under way. A process of a newer release binds dev's instances (in dev, and
// in team-b while dev grants it) and writes its bindings in a record format this release
// cannot read, with the catalog's finalizer; it unbinds them now and then, and unbinds
// those marked for deletion (its own reconcile), at quiescence too. A process of an older
// release writes records of dev and team-b back in format 1 (the status inside the
// record's data), as a release before format 2 does when it steps them.
//
// Checked after every step: the broker is never asked to DELETE an instance while it
// holds a binding of it (checked as the request arrives), the newer release's included;
// every binding of the newer release the broker holds has its ConfigMap, still carrying
// the catalog's finalizer (nothing it made is orphaned: no process of this release
// released or dropped it). At quiescence, the same, and every binding the broker holds of
// the newer release is owned by its ConfigMap.

var otherReleases = flag.Bool("sim.oldrelease", false, "let a process of a newer release bind dev's instances in a record format this release cannot read, and one of an older release write records back in format 1")

// modelProc is the kind of the processes of the worlds of release_test.go,
// paramsecret_test.go and dryrun_test.go (another release's, the editor of a parameters
// Secret, an administrator's dry runs): each does
// what its name says (worldTask).
const modelProc kind = 1 << 8

// nextFormat is the record format of the newer release.
const nextFormat = "99"

// releaseState is what the newer release holds: the OSB id of each of its bindings, by
// the ConfigMap ("namespace/name") that records it.
type releaseState struct {
	bindings map[string]string
}

// addModelProcs adds the processes of -sim.oldrelease, -sim.paramsecret and -sim.dryrun
// to a world.
func (w *world) addModelProcs() {
	if *otherReleases {
		w.releases.bindings = map[string]string{}
		w.procs = append(w.procs, w.newProc("release-next", modelProc, "dev"), w.newProc("release-old", modelProc, "dev"))
	}
	if *paramSecret {
		w.setupParamSecret()
		w.procs = append(w.procs, w.newProc("secret-editor", modelProc, "dev"))
	}
	w.addDryRunProc()
}

// worldTask is the next task of a process of kind modelProc.
func (w *world) worldTask(p *proc) (string, func(context.Context) error) {
	switch p.name {
	case "alice-vault", "mallory-dev":
		return w.trustTask(p)
	case "secret-editor":
		return w.secretEditorTask()
	case "dry-run":
		return w.dryRunTask(p)
	case maintainerName:
		return w.maintainerTask(p) // upgrade_test.go
	case migratorName:
		return w.migratorTask(p) // migrate_test.go
	case moverName, releaserName, oldDevName, newDevName, newRecName:
		return w.moveTask(p) // move_test.go
	}
	if p.name == "release-old" {
		if !w.faults || w.rng.IntN(3) > 0 {
			return "nothing", func(context.Context) error { return nil }
		}
		return "write a record back in format 1", func(context.Context) error { w.writeFormat1(); return nil }
	}
	switch n := w.rng.IntN(10); {
	case n < 4 && w.faults:
		return "bind (newer release)", func(context.Context) error { w.nextBind(); return nil }
	case n < 6 && w.faults:
		return "unbind (newer release)", func(context.Context) error {
			keys := slices.Sorted(maps.Keys(w.releases.bindings))
			if len(keys) > 0 {
				w.nextUnbind(keys[w.rng.IntN(len(keys))])
			}
			return nil
		}
	}
	return "reconcile (newer release)", func(context.Context) error { w.nextReconcile(); return nil }
}

// nextBind is a bind of the newer release: its record first, with the finalizer, then the
// broker's binding (its write-ahead and its call, as one step: a newer release has claims
// of its own, which this model leaves out). It binds an instance of dev ready at the broker
// and not being deleted, in dev or in team-b while dev shares the instance with it.
func (w *world) nextBind() {
	ctx := context.Background()
	insts, err := w.checker.Instances().List(ctx, "dev", store.Filter{})
	if _, ok := store.Unreadable(err); err != nil && !ok {
		panic(err)
	}
	insts = slices.DeleteFunc(insts, func(x *v1alpha1.ServiceInstance) bool {
		if x.DeletionTimestamp != nil || x.Status.Provisioned == nil || x.Spec.UserProvided != nil || x.Status.InFlight != nil || x.Status.OrphanMitigation != nil {
			return true
		}
		_, held := w.ledger.Instance(x.CurrentExternalID())
		return !held
	})
	if len(insts) == 0 {
		return
	}
	x := insts[w.rng.IntN(len(insts))]
	ns := "dev"
	if slices.Contains(x.Spec.SharedWith, "team-b") && w.rng.IntN(2) == 0 {
		ns = "team-b"
	}
	if !w.creatableIn(ns) {
		return
	}
	name := store.ConfigMapName(v1alpha1.KindServiceBinding, fmt.Sprintf("next-%d", w.rng.IntN(2)))
	if _, ok := w.releases.bindings[ns+"/"+name]; ok {
		return
	}
	id := fmt.Sprintf("next-binding-%08x", w.rng.Uint32())
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: []string{store.Finalizer},
			Labels: map[string]string{store.LabelKind: v1alpha1.KindServiceBinding, store.LabelInstance: x.Name,
				store.LabelManagedBy: store.ManagedBy, store.LabelPending: "true"},
			Annotations: map[string]string{store.AnnotationFormat: nextFormat}},
		Data: map[string]string{store.DataKey: fmt.Sprintf(`{"next":{"instance":%q,"id":%q}}`, x.Name, id)},
	}
	if ns != x.Namespace {
		cm.Labels[store.LabelInstanceNamespace] = x.Namespace
	}
	if _, err := w.cluster.Core.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		w.logf("%-14s bind %s/%s: %v", "release-next", ns, name, err)
		return
	}
	w.releases.bindings[ns+"/"+name] = id
	w.ledger.PutBinding(fake.Held{ID: id, InstanceID: x.CurrentExternalID(), Namespace: ns, Credentials: map[string]any{"password": "next"}})
	w.logf("%-14s binds %s to instance dev/%s (%s) under %s, recorded in format %s", "release-next", id, x.Name, x.CurrentExternalID(), ns+"/"+name, nextFormat)
	w.wrote = true
}

// nextUnbind is an unbind of the newer release: the broker's binding, then its record.
func (w *world) nextUnbind(key string) {
	ctx := context.Background()
	id := w.releases.bindings[key]
	ns, name, _ := strings.Cut(key, "/")
	w.ledger.DropBinding(id)
	delete(w.releases.bindings, key)
	cms := w.cluster.Core.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		w.fail("the newer release's binding %s (OSB id %s) has no ConfigMap: %v", key, id, err)
		return
	}
	cm.Finalizers = slices.DeleteFunc(cm.Finalizers, func(f string) bool { return f == store.Finalizer })
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		panic(err)
	}
	if cm.DeletionTimestamp == nil {
		if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			panic(err)
		}
	}
	w.logf("%-14s unbinds %s (%s)", "release-next", id, key)
	w.wrote = true
}

// nextReconcile is the newer release's reconcile: it unbinds its bindings marked for
// deletion.
func (w *world) nextReconcile() {
	for _, key := range slices.Sorted(maps.Keys(w.releases.bindings)) {
		ns, name, _ := strings.Cut(key, "/")
		cm, err := w.cluster.Core.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && cm.DeletionTimestamp == nil {
			continue
		}
		w.nextUnbind(key)
	}
}

// checkReleases is checked after every step and at quiescence: every binding of the newer
// release the broker holds has its ConfigMap, with the catalog's finalizer.
func (w *world) checkReleases() {
	if !*otherReleases {
		return
	}
	for _, key := range slices.Sorted(maps.Keys(w.releases.bindings)) {
		id := w.releases.bindings[key]
		if _, held := w.ledger.Binding(id); !held {
			continue
		}
		ns, name, _ := strings.Cut(key, "/")
		cm, err := w.cluster.Core.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			w.fail("the broker holds binding %s of the newer release, and its ConfigMap %s is gone: orphaned", id, key)
		case err != nil:
			panic(err)
		case !slices.Contains(cm.Finalizers, store.Finalizer):
			w.fail("the broker holds binding %s of the newer release, and its ConfigMap %s lost the catalog's finalizer", id, key)
		case cm.Annotations[store.AnnotationFormat] != nextFormat:
			w.fail("ConfigMap %s of the newer release's binding %s was rewritten by this release (format %q)", key, id, cm.Annotations[store.AnnotationFormat])
		}
	}
}

// nextReleaseOwns reports a binding the broker holds for the newer release (its ConfigMap
// owns it: checkReleases).
func (w *world) nextReleaseOwns(id string) bool {
	return *otherReleases && slices.Contains(slices.Collect(maps.Values(w.releases.bindings)), id)
}

// writeFormat1 is the older release writing a record of dev or team-b back in format 1:
// the status inside the record's data, with no status key.
func (w *world) writeFormat1() {
	ctx := context.Background()
	ns := []string{"dev", "team-b"}[w.rng.IntN(2)]
	if !w.creatableIn(ns) {
		return
	}
	cms := w.cluster.Core.CoreV1().ConfigMaps(ns)
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: store.LabelManagedBy + "=" + store.ManagedBy})
	if err != nil {
		panic(err)
	}
	var cands []*corev1.ConfigMap
	for i := range list.Items {
		cm := &list.Items[i]
		k := cm.Labels[store.LabelKind]
		if (k == v1alpha1.KindServiceInstance || k == v1alpha1.KindServiceBinding) && cm.Annotations[store.AnnotationFormat] == "2" {
			cands = append(cands, cm)
		}
	}
	if len(cands) == 0 {
		return
	}
	cm := cands[w.rng.IntN(len(cands))].DeepCopy()
	var body map[string]json.RawMessage
	if err := json.Unmarshal([]byte(cm.Data[store.DataKey]), &body); err != nil {
		panic(err)
	}
	if st, ok := cm.Data[store.StatusDataKey]; ok {
		body["status"] = json.RawMessage(st)
	}
	data, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	cm.Data[store.DataKey] = string(data)
	delete(cm.Data, store.StatusDataKey)
	cm.Annotations[store.AnnotationFormat] = "1"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		panic(err)
	}
	w.logf("%-14s writes %s/%s back in format 1", "release-old", ns, cm.Name)
	// Under the trust policy only the user the author annotation names may change a
	// record's data: the older release that writes it back is that user's own command.
	w.noteWrite(ns, cm.Name, cm.Annotations[store.AnnotationAuthor])
	w.wrote = true
	w.written[ns+"/"+cm.Name] = true
}

// modelQuiesce is what the processes of modelProc do in each round of quiescence: the
// newer release's reconcile unbinds its bindings marked for deletion, and the Secret of
// parameters holds a good token again.
func (w *world) modelQuiesce() {
	w.trustQuiesce()
	if *otherReleases {
		w.nextReconcile()
	}
	if *paramSecret && w.fromSecret.now == 0 {
		w.writeParamSecret()
	}
}

// TestSim_ModelWorlds runs a few seeds of each world of release_test.go,
// paramsecret_test.go, dryrun_test.go, upcreds_test.go and files_test.go, and of the
// trust policy beside some of them, as part of the default seeds
// (make soak runs many more); a run naming seeds or flags leaves it out.
func TestSim_ModelWorlds(t *testing.T) {
	if *firstSeed != 0 || *seeds != 0 {
		t.Skip("a run of chosen seeds")
	}
	count := 20
	if testing.Short() {
		count = 8
	}
	for _, world := range []struct {
		name  string
		flags []*bool
	}{
		{"-sim.oldrelease", []*bool{otherReleases}},
		{"-sim.paramsecret", []*bool{paramSecret}},
		{"-sim.dryrun", []*bool{dryRuns}},
		{"-sim.upshare -sim.upcreds", []*bool{upShare, upCreds}},
		{"-sim.files", []*bool{fileProjections}},
		// The trust policy beside the model's own processes (docs/engine.md, "Worlds
		// together").
		{"-sim.trust -sim.dryrun -sim.heldplan -sim.oldrelease", []*bool{trustPolicy, dryRuns, heldPlan, otherReleases}},
	} {
		n := count
		if len(world.flags) > 2 {
			n = count * 3 / 10 // (a world of several flags costs more a seed)
		}
		was := make([]bool, len(world.flags))
		for i, f := range world.flags {
			was[i], *f = *f, true
		}
		projected := 0
		for seed, w := range runSeeds(1, n) {
			projected += w.workloadWrites
			if len(w.failures) > 0 {
				t.Errorf("%s, seed %d: %s\nreplay: %s\n%s",
					world.name, seed, w.failures[0], replay(world.name, seed), tail(w.trace, 60))
			}
		}
		if workloadsOn() && projected == 0 {
			t.Errorf("%s: no seed projected a binding into a workload or took one back (workloads_test.go)", world.name)
		}
		for i, f := range world.flags {
			*f = was[i]
		}
	}
}

// creatableIn reports whether the world's own processes may create objects in namespace
// ns: not while it is being deleted (once gone, the model lets records be made there
// again, as requests sent before the deletion land, so it is as if made anew).
func (w *world) creatableIn(ns string) bool {
	return !w.terminatingNamespace(ns) || w.kube.gone
}
