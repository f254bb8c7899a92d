package store

import (
	"context"
	"errors"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ListPages is List a page at a time, for a reader that shows records and keeps none
// (get's table of every namespace): the records of each page of the list (limit and
// continue) go to page as soon as they are decoded, in the API server's order (by
// namespace, then by name within a namespace; not List's order across namespaces whose
// names are prefixes of each other), and are not kept. A ConfigMap that does not hold a
// readable record goes to page as an *Error among bad (IsCorrupt or
// IsUnsupportedFormat) and hides no other. An error page returns stops the list and is
// returned.
//
// When the list's snapshot expires between pages, restart is called and the list starts
// again in one request: what page was given until then is to be forgotten.
//
// The records are decoded only, not remembered for a later write (see Get): a caller
// that updates one reads it again.
func (r Records[T]) ListPages(ctx context.Context, namespace string, f Filter, page func(items []T, bad []error) error, restart func()) error {
	sel, err := f.selector(r.k.name)
	if err != nil {
		return &Error{Reason: ReasonInvalid, Op: "list", Kind: r.k.name, Namespace: namespace, Detail: "bad filter", Err: err}
	}
	if sel == nil {
		return nil
	}
	opts := metav1.ListOptions{LabelSelector: sel.String(), Limit: r.s.pageSize}
	for {
		list, err := r.s.core.CoreV1().ConfigMaps(namespace).List(ctx, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" {
			restart()
			opts.Continue, opts.Limit = "", 0
			continue
		}
		if err != nil {
			return apiError("list", r.k.name, namespace, "", err)
		}
		var items []T
		var bad []error
		for i := range list.Items {
			obj, err := decode(r.k, &list.Items[i])
			if err != nil {
				var se *Error
				if errors.As(err, &se) && slices.Contains(list.Items[i].Finalizers, Finalizer) {
					se.Finalized = true
				}
				bad = append(bad, err)
				continue
			}
			items = append(items, obj)
		}
		// The page's ConfigMaps are no longer needed once decoded.
		list.Items = nil
		if err := page(items, bad); err != nil {
			return err
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
}
