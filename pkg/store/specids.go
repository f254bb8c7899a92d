package store

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// SpecIDReadsEach is how many of the records IDIndex.Unclaimed names UnclaimedSpecIDs
// reads one at a time (a GET each). From this many on, and when they are at least
// an eighth of the instances and bindings the index listed, it lists the instances and
// bindings of the index's namespaces in full instead, a page at a time: on a cluster
// whose records have never been swept (every record carries an id label, and the
// labels do not say whether the id is bound to anything), that is a few pages instead
// of one request per record.
const SpecIDReadsEach = 32

// UnclaimedSpecIDs is SpecIDsOf of each record idx.Unclaimed names: the OSB ids bound to
// nothing that their specs name and they own. A record gone or replaced since the
// index's list, or that does not decode, has none. The error joins the failures of the
// records that could not be read; the uses found are returned with it.
func (s *Store) UnclaimedSpecIDs(ctx context.Context, idx *IDIndex) ([]SpecIDUse, error) {
	recs := idx.Unclaimed()
	if len(recs) == 0 {
		return nil, nil
	}
	if len(recs) < SpecIDReadsEach || len(recs)*8 < idx.Listed() || idx.within != nil {
		var uses []SpecIDUse
		var errs []error
		for _, w := range recs {
			u, err := s.SpecIDsOf(ctx, w.Kind, w.Namespace, w.Name, w.UID)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			uses = append(uses, u...)
		}
		return uses, errors.Join(errs...)
	}
	want := make(map[types.UID]string, len(recs))
	for _, w := range recs {
		want[w.UID] = w.Kind
	}
	req, err := labels.NewRequirement(LabelKind, selection.In, []string{v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding})
	if err != nil {
		return nil, err
	}
	var uses []SpecIDUse
	err = s.pages(ctx, idx.namespace, labels.NewSelector().Add(*req).String(), func(cms []corev1.ConfigMap) {
		for i := range cms {
			cm := &cms[i]
			if kind, ok := want[cm.UID]; ok && cm.Labels[LabelKind] == kind {
				uses = append(uses, specIDsIn(kind, cm)...)
			}
		}
	}, func() { uses = nil })
	if err != nil {
		return nil, apiError("list", v1alpha1.KindServiceInstance, idx.namespace, "", err)
	}
	return uses, nil
}
