package engine

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
