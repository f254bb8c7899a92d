package declarative

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// Over is want with what it leaves out (the broker, plan and OSB id) taken from cur,
// and the class said as cur says it when want gives its id.
func (s *InstanceSpec) Over(cur *v1alpha1.ServiceInstance) *InstanceSpec {
	out := *s
	if out.Class == cur.Spec.ClassID {
		out.Class = cur.Spec.ClassExternalName
	}
	if out.Plan == "" || out.Plan == cur.Spec.PlanID {
		out.Plan = cur.Spec.PlanExternalName
	}
	if out.Broker == "" {
		out.Broker = cur.Spec.BrokerName
	}
	if out.ExternalID == "" {
		out.ExternalID = cur.Spec.ExternalID
	}
	return &out
}

// Over is want with bind's defaults (the Secret named after the binding) and the OSB id
// of cur when want gives none.
func (s *BindingSpec) Over(o *Object, cur *v1alpha1.ServiceBinding) *BindingSpec {
	out := *s
	if out.SecretName == "" {
		out.SecretName = o.Name
	}
	if out.InstanceNamespace == o.Namespace {
		out.InstanceNamespace = ""
	}
	if out.ExternalID == "" {
		out.ExternalID = cur.Spec.ExternalID
	}
	return &out
}

// ClassRef is the class as provision takes it: BROKER/CLASS when the broker is named.
func (s *InstanceSpec) ClassRef() string {
	if s.Broker != "" {
		return s.Broker + "/" + s.Class
	}
	return s.Class
}

// ImmutableInstance refuses a change of what an instance cannot change.
func ImmutableInstance(cur *v1alpha1.ServiceInstance, want *InstanceSpec) error {
	refuse := func(field, from, to string) error {
		return fmt.Errorf("instance %q: %s cannot change (%s to %s): deprovision it and provision a new instance, or put the manifest back", cur.Name, field, from, to)
	}
	switch {
	case want.UserProvided != cur.IsUserProvided():
		return refuse("spec.userProvided", fmt.Sprint(cur.IsUserProvided()), fmt.Sprint(want.UserProvided))
	case want.UserProvided:
		return nil
	case want.Class != cur.Spec.ClassExternalName && want.Class != cur.Spec.ClassID:
		return refuse("the class", cur.Spec.ClassExternalName, want.Class)
	case want.Broker != "" && want.Broker != cur.Spec.BrokerName:
		return refuse("spec.brokerName", cur.Spec.BrokerName, want.Broker)
	case want.ExternalID != "" && want.ExternalID != cur.Spec.ExternalID:
		return refuse("spec.externalID", cur.Spec.ExternalID, want.ExternalID)
	}
	return nil
}

// ChangedParameters returns the parameters of want that differ from cur's (nil when
// none do). A parameter left out of want is refused: an update only adds or changes
// parameters.
func ChangedParameters(cur, want *runtime.RawExtension) (map[string]any, error) {
	c, err := ParameterMap(cur)
	if err != nil {
		return nil, err
	}
	w, err := ParameterMap(want)
	if err != nil {
		return nil, err
	}
	var removed []string
	for k := range c {
		if _, ok := w[k]; !ok {
			removed = append(removed, k)
		}
	}
	if len(removed) > 0 {
		sort.Strings(removed)
		return nil, fmt.Errorf("parameters %s are not in the manifest: an update changes or adds parameters, it cannot remove one; put them back (a broker keeps them anyway)", strings.Join(removed, ", "))
	}
	var out map[string]any
	for k, v := range w {
		if !reflect.DeepEqual(c[k], v) {
			if out == nil {
				out = map[string]any{}
			}
			out[k] = v
		}
	}
	return out, nil
}

// ParameterMap decodes parameters into a map; nil for none.
func ParameterMap(x *runtime.RawExtension) (map[string]any, error) {
	if x == nil || len(x.Raw) == 0 || string(x.Raw) == "null" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(x.Raw, &m); err != nil {
		return nil, fmt.Errorf("spec.parameters must be a JSON object: %w", err)
	}
	return m, nil
}

// AddedSecrets returns the Secret references of want that cur lacks; one cur has and
// want lacks is refused, as a removed parameter is.
func AddedSecrets(cur, want []v1alpha1.ParametersFromSource) ([]v1alpha1.ParametersFromSource, error) {
	key := func(s v1alpha1.ParametersFromSource) string {
		if s.SecretKeyRef == nil {
			return ""
		}
		return s.SecretKeyRef.Name + "/" + s.SecretKeyRef.Key
	}
	var curKeys, wantKeys []string
	for _, s := range cur {
		curKeys = append(curKeys, key(s))
	}
	for _, s := range want {
		wantKeys = append(wantKeys, key(s))
	}
	for _, k := range curKeys {
		if !slices.Contains(wantKeys, k) {
			return nil, fmt.Errorf("spec.parametersFrom no longer names Secret %s: an update cannot remove parameters; put it back", strings.TrimSuffix(k, "/"))
		}
	}
	var out []v1alpha1.ParametersFromSource
	for i, k := range wantKeys {
		if !slices.Contains(curKeys, k) {
			out = append(out, want[i])
		}
	}
	return out, nil
}

func SameStrings(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// RecordInstanceSpec is an instance record's spec as a manifest says it.
func RecordInstanceSpec(r *v1alpha1.ServiceInstance) *InstanceSpec {
	s := r.Spec
	return &InstanceSpec{Class: s.ClassExternalName, Broker: s.BrokerName, Plan: s.PlanExternalName, Params: s.Parameters, From: s.ParametersFrom,
		ExternalID: s.ExternalID, MaxBindings: s.MaxBindings, Allowed: s.AllowedNamespaces, SharedWith: s.SharedWith, UserProvided: s.UserProvided != nil,
		RebindOnUpdate: RebindPolicy(s.RebindOnUpdate)}
}

// RebindPolicy is spec.rebindOnUpdate as a manifest says it: Never, the default, is
// empty.
func RebindPolicy(p v1alpha1.RebindPolicy) v1alpha1.RebindPolicy {
	if p == v1alpha1.RebindNever {
		return ""
	}
	return p
}

// RecordBindingSpec is a binding record's spec as a manifest says it.
func RecordBindingSpec(r *v1alpha1.ServiceBinding) *BindingSpec {
	s := r.Spec
	return &BindingSpec{Instance: s.InstanceName, InstanceNamespace: s.InstanceNamespace, SecretName: s.SecretName, Params: s.Parameters,
		From: s.ParametersFrom, Transforms: s.SecretTransforms, Projections: s.Projections, ExternalID: s.ExternalID,
		SecretTemplate: s.SecretTemplate}
}
