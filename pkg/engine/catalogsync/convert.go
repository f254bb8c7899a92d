package catalogsync

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

func rawJSON(v any) *runtime.RawExtension {
	if v == nil {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil || string(data) == "null" {
		return nil
	}
	return &runtime.RawExtension{Raw: data}
}

func rawMessage(m json.RawMessage) *runtime.RawExtension {
	if len(m) == 0 || string(m) == "null" {
		return nil
	}
	return &runtime.RawExtension{Raw: m}
}

// classSpec is the class record's spec for service s of broker b (without plans the
// broker dropped; the caller merges those).
func classSpec(b *v1alpha1.Broker, s *osb.Service) v1alpha1.ServiceClassSpec {
	spec := v1alpha1.ServiceClassSpec{
		BrokerName:           b.Name,
		Scope:                b.Spec.Scope,
		ID:                   s.ID,
		ExternalName:         s.Name,
		Description:          s.Description,
		Tags:                 s.Tags,
		Requires:             s.Requires,
		Bindable:             s.Bindable,
		InstancesRetrievable: s.InstancesRetrievable,
		BindingsRetrievable:  s.BindingsRetrievable,
		AllowContextUpdates:  s.AllowContextUpdates,
		PlanUpdateable:       s.PlanUpdateable != nil && *s.PlanUpdateable,
		Plans:                make([]v1alpha1.ServicePlan, 0, len(s.Plans)),
	}
	if len(s.Metadata) > 0 {
		spec.Metadata = rawJSON(s.Metadata)
	}
	for i := range s.Plans {
		spec.Plans = append(spec.Plans, planOf(&s.Plans[i]))
	}
	return spec
}

func planOf(p *osb.Plan) v1alpha1.ServicePlan {
	out := v1alpha1.ServicePlan{
		ID:               p.ID,
		ExternalName:     p.Name,
		Description:      p.Description,
		Free:             p.IsFree(),
		Bindable:         p.Bindable,
		PlanUpdateable:   p.PlanUpdateable,
		BindingRotatable: p.BindingRotatable,
	}
	if d := p.MaxPollingDuration(); d > 0 {
		out.MaximumPollingDuration = &metav1.Duration{Duration: d.Round(time.Second)}
	}
	if mi := p.MaintenanceInfo; mi != nil {
		out.MaintenanceInfo = &v1alpha1.MaintenanceInfo{Version: mi.Version, Description: mi.Description}
	}
	if pm := p.ProfileMetadata(); pm.DisplayName != "" || len(pm.Bullets) > 0 || len(pm.Costs) > 0 {
		md := &v1alpha1.PlanMetadata{DisplayName: pm.DisplayName, Bullets: pm.Bullets}
		for _, c := range pm.Costs {
			md.Costs = append(md.Costs, v1alpha1.PlanCost{Amount: c.Amount, Unit: c.Unit})
		}
		out.Metadata = md
	}
	return out
}

// schemasSpec is the schemas record's spec for service s; it has no plans when no plan has
// a schema.
func schemasSpec(b *v1alpha1.Broker, s *osb.Service) v1alpha1.ServicePlanSchemasSpec {
	spec := v1alpha1.ServicePlanSchemasSpec{BrokerName: b.Name, Scope: b.Spec.Scope, ClassID: s.ID}
	for i := range s.Plans {
		p := &s.Plans[i]
		ps := v1alpha1.PlanSchemas{
			PlanID:         p.ID,
			InstanceCreate: rawMessage(p.InstanceCreateSchema()),
			InstanceUpdate: rawMessage(p.InstanceUpdateSchema()),
			BindingCreate:  rawMessage(p.BindingCreateSchema(s)),
		}
		if ps.InstanceCreate != nil || ps.InstanceUpdate != nil || ps.BindingCreate != nil {
			spec.Plans = append(spec.Plans, ps)
		}
	}
	return spec
}

// digest identifies v by its compact JSON: the store re-indents raw JSON, so byte
// comparison of decoded records would see changes where there are none.
func digest(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}
