package engine

import (
	"context"
	"fmt"
	"maps"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// RelabelRequest asks for the labels and annotations of an existing instance or binding
// that are not the catalog's own to be Metadata's ("kubectl catalog apply -f" of a
// manifest whose labels changed).
type RelabelRequest struct {
	// Kind is v1alpha1.KindServiceInstance or v1alpha1.KindServiceBinding.
	Kind            string
	Namespace, Name string
	Metadata        RecordMetadata
	// DryRun writes nothing (DryRunServer sends the write to the API server as a dry
	// run).
	DryRun DryRun
}

// UserMetadata is the part of labels and annotations that is not the catalog's own: what
// a user gives a record, and what Relabel changes.
func UserMetadata(labels, annotations map[string]string) RecordMetadata {
	return RecordMetadata{Labels: withoutCatalogKeys(nil, labels), Annotations: withoutCatalogKeys(nil, annotations)}
}

// Equal reports whether m and o have the same labels and annotations (nil and empty
// alike).
func (m RecordMetadata) Equal(o RecordMetadata) bool {
	return maps.Equal(m.Labels, o.Labels) && maps.Equal(m.Annotations, o.Annotations)
}

// Relabel makes the record's labels and annotations that are not the catalog's own
// req.Metadata's, in one write, and calls no broker. It reports whether they differed.
// The catalog's own keys (kind, pending, ids, author, claim, format...) are kept as the
// record has them, whatever req says, so the write neither clears nor forges them. The
// write is not the user's intent: labels and annotations are not the spec, the record's
// author stays, and the trust policy lets whoever may write the ConfigMap change them
// (nothing the engine does depends on them).
func (e *Engine) Relabel(ctx context.Context, req RelabelRequest) (bool, error) {
	switch req.Kind {
	case v1alpha1.KindServiceInstance:
		return relabel(ctx, e.cfg.Store.Instances(), req)
	case v1alpha1.KindServiceBinding:
		return relabel(ctx, e.cfg.Store.Bindings(), req)
	}
	return false, fmt.Errorf("records of kind %s are not relabelled", req.Kind)
}

func relabel[T v1alpha1.Record](ctx context.Context, records store.Records[T], req RelabelRequest) (bool, error) {
	want := UserMetadata(req.Metadata.Labels, req.Metadata.Annotations)
	cur, err := records.Get(ctx, req.Namespace, req.Name)
	if err != nil {
		return false, err
	}
	if UserMetadata(cur.GetLabels(), cur.GetAnnotations()).Equal(want) {
		return false, nil
	}
	if req.DryRun == DryRunClient {
		return true, nil
	}
	if req.DryRun == DryRunServer {
		ctx = store.WithDryRun(ctx)
	}
	_, err = records.UpdateWithRetry(ctx, req.Namespace, req.Name, func(r T) error {
		if r.GetUID() != cur.GetUID() {
			return fmt.Errorf("%s %q changed meanwhile: run the command again", req.Kind, req.Name)
		}
		r.SetLabels(withoutCatalogKeys(catalogKeys(r.GetLabels()), want.Labels))
		r.SetAnnotations(withoutCatalogKeys(catalogKeys(r.GetAnnotations()), want.Annotations))
		return nil
	})
	if err != nil {
		return true, fmt.Errorf("cannot change the labels of %s %q: %w", req.Kind, req.Name, err)
	}
	return true, nil
}

// catalogKeys is the entries of m that are the catalog's own.
func catalogKeys(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if IsCatalogKey(k) {
			out[k] = v
		}
	}
	return out
}
