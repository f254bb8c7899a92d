package catalogsync

import (
	"context"
	"fmt"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// instanceUsage is which classes and plans of a broker instances use.
type instanceUsage struct {
	classes map[string]bool
	plans   map[string]bool
	// unknown: instances could not be listed, so everything counts as used (nothing is
	// deleted; classes are only marked).
	unknown bool
	warning string
}

func (u *instanceUsage) classUsed(classID string) bool { return u.unknown || u.classes[classID] }

func (u *instanceUsage) planUsed(classID, planID string) bool {
	return u.unknown || u.plans[classID+"/"+planID]
}

// InstancesOf lists the instances of broker b's classes: in every namespace for a
// cluster-scoped broker, in b's namespace otherwise.
func InstancesOf(ctx context.Context, st *store.Store, b *v1alpha1.Broker) ([]*v1alpha1.ServiceInstance, error) {
	ns := b.Namespace
	if b.Spec.Scope == v1alpha1.ScopeCluster {
		ns = ""
	}
	insts, err := st.Instances().List(ctx, ns, store.Filter{Broker: b.Name, Scope: b.Spec.Scope})
	return insts, err
}

func (s *Syncer) instanceUsage(ctx context.Context, b *v1alpha1.Broker) (*instanceUsage, error) {
	u := &instanceUsage{classes: map[string]bool{}, plans: map[string]bool{}}
	insts, err := InstancesOf(ctx, s.st, b)
	if store.IsForbidden(err) {
		u.unknown = true
		u.warning = fmt.Sprintf("not allowed to list instances in every namespace, so classes and plans broker %q no longer offers are kept, marked removed; a user who may list ConfigMaps cluster-wide can run \"kubectl catalog sync broker %s\" to delete the unused ones", b.Name, b.Name)
		return u, nil
	}
	if err != nil && len(insts) == 0 {
		return nil, fmt.Errorf("cannot tell which classes of broker %q instances use: %w", b.Name, err)
	}
	if err != nil {
		// Some records unreadable: be safe, delete nothing.
		u.unknown = true
		u.warning = fmt.Sprintf("some instance records could not be read (%v), so nothing broker %q dropped is deleted", err, b.Name)
	}
	for _, in := range insts {
		u.classes[in.Spec.ClassID] = true
		u.plans[in.Spec.ClassID+"/"+in.Spec.PlanID] = true
		if p := in.Status.Provisioned; p != nil {
			u.plans[in.Spec.ClassID+"/"+p.PlanID] = true
		}
		if op := in.Status.InFlight; op != nil && op.PlanID != "" {
			u.plans[in.Spec.ClassID+"/"+op.PlanID] = true
		}
	}
	return u, nil
}
