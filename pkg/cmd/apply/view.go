package apply

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/declarative"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// The fields apply manages, as "diff" shows them: a record's spec as a manifest says it.

func instanceView(s *declarative.InstanceSpec) map[string]any {
	return compact(map[string]any{
		"class": s.Class, "broker": s.Broker, "plan": s.Plan, "parameters": rawValue(s.Params), "parametersFrom": s.From,
		"externalID": s.ExternalID, "maxBindings": s.MaxBindings, "allowedNamespaces": s.Allowed, "sharedWith": s.SharedWith,
		"userProvided": s.UserProvided, "rebindOnUpdate": string(s.RebindOnUpdate),
	})
}

func bindingView(s *declarative.BindingSpec) map[string]any {
	return compact(map[string]any{
		"instanceName": s.Instance, "instanceNamespace": s.InstanceNamespace, "secretName": s.SecretName, "parameters": rawValue(s.Params),
		"parametersFrom": s.From, "secretTransforms": s.Transforms, "projections": s.Projections, "externalID": s.ExternalID,
		"secretTemplate": s.SecretTemplate,
	})
}

// brokerView is a broker's spec as a manifest says it: the Secret by name only, and
// without the relist requests, which "sync broker" makes.
func brokerView(s *v1alpha1.BrokerSpec) map[string]any {
	v := map[string]any{
		"url": s.URL, "scope": string(s.Scope), "caBundle": s.CABundle, "insecureSkipTLSVerify": s.InsecureSkipTLSVerify,
		"relistInterval": s.RelistInterval, "catalogRestrictions": s.CatalogRestrictions,
	}
	if s.Auth != nil {
		v["auth"] = map[string]any{"type": string(s.Auth.Type), "secretRef": map[string]any{"name": s.Auth.SecretRef.Name}}
	}
	return compact(v)
}

// rawValue decodes parameters for a view; nil for none.
func rawValue(r *runtime.RawExtension) any {
	m, _ := declarative.ParameterMap(r)
	if m == nil {
		return nil
	}
	return m
}

// compact turns v into plain JSON values, dropping empty ones, so that two views
// compare as their YAML does.
func compact(v map[string]any) map[string]any {
	out := map[string]any{}
	for k, x := range v {
		if x == nil {
			continue
		}
		rv := reflect.ValueOf(x)
		if (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Slice || rv.Kind() == reflect.Map) && (rv.IsNil() || (rv.Kind() != reflect.Pointer && rv.Len() == 0)) {
			continue
		}
		if rv.IsZero() {
			continue
		}
		b, _ := json.Marshal(x)
		var plain any
		_ = json.Unmarshal(b, &plain)
		out[k] = plain
	}
	return out
}

// changedFields names the fields that differ between two views.
func changedFields(before, after map[string]any) []string {
	var out []string
	for k := range keys(before, after) {
		if !reflect.DeepEqual(before[k], after[k]) {
			out = append(out, "spec."+k)
		}
	}
	sort.Strings(out)
	return out
}

func keys(ms ...map[string]any) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			out[k] = true
		}
	}
	return out
}

// viewYAML is a view as diff shows it: the object's kind, namespace, name, labels and
// annotations (those that are not the catalog's own), then the fields; "" for none.
func viewYAML(o *declarative.Object, v map[string]any, meta engine.RecordMetadata) string {
	if v == nil {
		return ""
	}
	md := compact(map[string]any{"namespace": o.Namespace, "name": o.Name, "labels": meta.Labels, "annotations": meta.Annotations})
	b, err := yaml.Marshal(map[string]any{"kind": o.Kind, "metadata": md, "spec": v})
	if err != nil {
		return fmt.Sprintf("# %v\n", err)
	}
	return string(b)
}
