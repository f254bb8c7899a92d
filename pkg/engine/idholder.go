package engine

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// olderHolder is the first of users (records WithExternalID found labelled with OSB id
// id) other than rec, created no later than rec, that is a real record using id
// (store.HoldsExternalID); nil when there is none. A ConfigMap with the id's label that
// holds no readable record naming the id, as anyone who may write ConfigMaps can create,
// keeps no record from its calls. One the reader may not read counts: nobody can tell.
func (e *Engine) olderHolder(ctx context.Context, kind string, rec metav1.Object, id string, users []store.IDUser) (*store.IDUser, error) {
	created := rec.GetCreationTimestamp()
	for _, u := range users {
		if u.UID == rec.GetUID() || created.Time.Before(u.Created.Time) {
			continue
		}
		holds, err := e.cfg.Store.HoldsExternalID(ctx, kind, u, id)
		if store.IsForbidden(err) {
			holds, err = true, nil
		}
		if err != nil {
			return nil, err
		}
		if holds {
			return &u, nil
		}
	}
	return nil, nil
}

// idOwner is a record that says which OSB ids are its own.
type idOwner interface {
	metav1.Object
	OwnsExternalID(id string) bool
}

// checkOwnID refuses to send OSB id for rec (of kind) unless the id is rec's own: bound
// to its uid or namespace, or named by its spec (v1alpha1.ServiceInstance.OwnsExternalID).
// Ownership is never read from a status, labels or the time a record was created: a
// status is free to write for anyone who may update the ConfigMap, so an id copied into
// an older record's status would otherwise make it the id's first user.
func checkOwnID(kind string, rec idOwner, id string) error {
	if rec.OwnsExternalID(id) {
		return nil
	}
	what := kindWord(kind)
	how := fmt.Sprintf("if the broker holds it for this %s, take it over in a record of its own (\"kubectl catalog %s --external-id %s\"); otherwise remove it from the status (status.externalID, status.externalIDs, status.inFlight), or drop the record without calling the broker (\"kubectl catalog %s --abandon %s\")",
		what, map[string]string{"instance": "provision", "binding": "bind"}[what], id, map[string]string{"instance": "deprovision", "binding": "unbind"}[what], rec.GetName())
	why := "its spec does not name it"
	if v1alpha1.IsBoundID(id) {
		why = "it was generated for another record or namespace"
	}
	return refused(ReasonRefusedIDNotOwned, "refused to send OSB id %s for %s %q in namespace %q: %s, and a status proves nothing (whoever may update the ConfigMap writes it): %s",
		id, what, rec.GetName(), rec.GetNamespace(), why, how)
}
