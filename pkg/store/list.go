package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// Filter selects records by their labels. Empty fields select everything.
type Filter struct {
	// Broker is a broker's record name.
	Broker string
	// Class is a class's external (OSB) name.
	Class string
	// Plan is a plan's external (OSB) name.
	Plan string
	// Instance is an instance's record name (selects bindings). Without
	// InstanceNamespace it selects the bindings of the instance of that name in their own
	// namespace, not those of an instance shared from another namespace.
	Instance string
	// InstanceNamespace, with Instance, selects the bindings of the instance shared from
	// that namespace (list them in every namespace, or in one consumer's).
	InstanceNamespace string
	// Scope is a broker's scope.
	Scope v1alpha1.Scope
	// PendingOnly selects only records labelled pending.
	PendingOnly bool
	// Selector is an additional label selector, e.g. from the user's -l flag.
	Selector labels.Selector
}

// selector is f as a label selector for records of kind k; nil when f.Selector selects
// nothing (labels.Nothing()).
func (f Filter) selector(k string) (labels.Selector, error) {
	sel := labels.NewSelector()
	add := func(key string, op selection.Operator, values ...string) error {
		req, err := labels.NewRequirement(key, op, values)
		if err != nil {
			return err
		}
		sel = sel.Add(*req)
		return nil
	}
	if err := add(LabelKind, selection.Equals, k); err != nil {
		return nil, err
	}
	for key, v := range map[string]string{
		LabelBroker: f.Broker, LabelClass: f.Class, LabelPlan: f.Plan, LabelInstance: f.Instance, LabelScope: string(f.Scope),
	} {
		if v == "" {
			continue
		}
		if err := add(key, selection.Equals, LabelValue(v)); err != nil {
			return nil, err
		}
	}
	if f.Instance != "" {
		op, values := selection.DoesNotExist, []string(nil)
		if f.InstanceNamespace != "" {
			op, values = selection.Equals, []string{LabelValue(f.InstanceNamespace)}
		}
		if err := add(LabelInstanceNamespace, op, values...); err != nil {
			return nil, err
		}
	}
	if f.PendingOnly {
		if err := add(LabelPending, selection.Equals, "true"); err != nil {
			return nil, err
		}
	}
	if f.Selector != nil {
		reqs, selectable := f.Selector.Requirements()
		if !selectable {
			return nil, nil
		}
		sel = sel.Add(reqs...)
	}
	return sel, nil
}

// List returns every record in namespace (all namespaces when namespace is "") that
// matches f, sorted by namespace and name. It reads the ConfigMaps page by page (limit and
// continue); if the list's snapshot expires between pages, it lists again in one request.
//
// A ConfigMap that does not hold a readable record does not hide the others: List returns
// the records it could read together with an error joining one *Error per unreadable
// ConfigMap (IsCorrupt or IsUnsupportedFormat).
func (r Records[T]) List(ctx context.Context, namespace string, f Filter) ([]T, error) {
	sel, err := f.selector(r.k.name)
	if err != nil {
		return nil, &Error{Reason: ReasonInvalid, Op: "list", Kind: r.k.name, Namespace: namespace, Detail: "bad filter", Err: err}
	}
	if sel == nil {
		return nil, nil
	}
	var items []T
	var bad []error
	err = r.s.pages(ctx, namespace, sel.String(), func(cms []corev1.ConfigMap) {
		for i := range cms {
			obj, err := decoded(r.s, r.k, &cms[i])
			if err != nil {
				var se *Error
				if errors.As(err, &se) && slices.Contains(cms[i].Finalizers, Finalizer) {
					se.Finalized = true
				}
				bad = append(bad, err)
				continue
			}
			items = append(items, obj)
		}
	}, func() { items, bad = nil, nil })
	if err != nil {
		return nil, apiError("list", r.k.name, namespace, "", err)
	}
	slices.SortFunc(items, func(a, b T) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	return items, errors.Join(bad...)
}

// pages lists the ConfigMaps matching selector page by page, handing each page to page.
// When a continue token has expired it calls restart and lists again without paging, as
// client-go's pager does.
func (s *Store) pages(ctx context.Context, namespace, selector string, page func([]corev1.ConfigMap), restart func()) error {
	opts := metav1.ListOptions{LabelSelector: selector, Limit: s.pageSize}
	for {
		list, err := s.core.CoreV1().ConfigMaps(namespace).List(ctx, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" {
			restart()
			opts.Continue, opts.Limit = "", 0
			continue
		}
		if err != nil {
			return err
		}
		page(list.Items)
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
}

// Selector is the label selector of the ConfigMaps of the records of kind (e.g.
// v1alpha1.KindServiceInstance) that f selects, for a caller that watches them.
func Selector(kind string, f Filter) (string, error) {
	sel, err := f.selector(kind)
	if err != nil {
		return "", err
	}
	if sel == nil {
		return "", fmt.Errorf("the selector selects no %s records", kind)
	}
	return sel.String(), nil
}

// Unreadable splits err, as List returns it, into one *Error per ConfigMap that does not
// hold a readable record (IsCorrupt or IsUnsupportedFormat): anyone who may write a
// ConfigMap can write one, so a caller reports each of them and goes on with the records
// List did read. ok is false when err is anything else (the list itself failed), or nil.
func Unreadable(err error) (bad []*Error, ok bool) {
	if err == nil {
		return nil, false
	}
	errs := []error{err}
	if j, isJoin := err.(interface{ Unwrap() []error }); isJoin {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var se *Error
		if !errors.As(e, &se) || se.Reason != ReasonCorrupt && se.Reason != ReasonUnsupportedFormat {
			return nil, false
		}
		bad = append(bad, se)
	}
	return bad, true
}
