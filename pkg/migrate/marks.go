package migrate

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// AnnotationMigratedTo marks an old instance or binding once its record is written: the
// uid of the record migrated from it. A later run that finds the mark and no record
// knows the record was deleted since (deprovisioned or unbound, or dropped with
// --abandon) and does not make it again from the old object, which still says the
// broker holds it: the broker holds nothing under its id any more (or, abandoned, it
// was given up on purpose), and a record made again would wait for ever on its next
// call.
//
// The mark is written after the record: a run stopped between the two leaves the mark
// to the next run, which writes it for a record it finds migrated from the object. A
// record deleted before that next run is made again (Known limits, docs/engine.md).
const AnnotationMigratedTo = store.Prefix + "migrated-to"

// markMigrated writes the mark on old object u naming record uid rec (nothing when it
// carries it already). A failure is said in the object's row and leaves the record as
// it is: it only keeps a later run from knowing the record was deleted.
func (m *Migrator) markMigrated(ctx context.Context, res schema.GroupVersionResource, u *unstructured.Unstructured, rec types.UID) error {
	if rec == "" || u.GetAnnotations()[AnnotationMigratedTo] == string(rec) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		// (Its uid: an object made again under the same name is not marked.)
		"uid":         u.GetUID(),
		"annotations": map[string]string{AnnotationMigratedTo: string(rec)},
	}})
	if err != nil {
		return err
	}
	p, err := m.cfg.Dynamic.Resource(res).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return err
	}
	u.SetAnnotations(p.GetAnnotations())
	m.wrote()
	return nil
}

// markNote is what a row says when its old object could not be marked.
func markNote(err error) string {
	return fmt.Sprintf("the old object could not be marked as migrated (%v): run this again (or --cleanup) before the record is deleted, or a later run makes it again from the old object", err)
}

// deletedSince is the outcome for an old object marked as migrated whose record is gone
// (done): the record was deleted after its migration, and is not made again.
func deletedSince(kind string, u *unstructured.Unstructured) (oc Outcome, done bool) {
	rec := u.GetAnnotations()[AnnotationMigratedTo]
	if rec == "" {
		return Outcome{}, false
	}
	return skipped(false, "its %s record, migrated from it before (uid %s), was deleted since (deprovisioned, unbound or abandoned): it is not made again, as the broker holds nothing under its id any more; --cleanup deletes this object",
		kind, rec), true
}
