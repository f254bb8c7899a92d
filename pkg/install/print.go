package install

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// Clean returns obj as a map without what a manifest should not carry:
// status, null creation timestamps, managed fields, and server-set metadata
// (uid, resourceVersion, generation, creationTimestamp).
func Clean(obj runtime.Object) map[string]any {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(fmt.Sprintf("install: cannot convert %T: %v", obj, err))
	}
	withKind(u, obj)
	delete(u, "status")
	if spec, ok := u["spec"].(map[string]any); ok && len(spec) == 0 {
		delete(u, "spec")
	}
	if md, ok := u["metadata"].(map[string]any); ok {
		for _, k := range []string{"managedFields", "uid", "resourceVersion", "generation", "creationTimestamp"} {
			delete(md, k)
		}
	}
	dropNullTimestamps(u)
	return u
}

// CleanServed is Clean for an object the API server returned: it keeps the
// server-set metadata and status, and drops only managed fields and null
// timestamps, as kubectl prints objects.
func CleanServed(obj runtime.Object) map[string]any {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(fmt.Sprintf("install: cannot convert %T: %v", obj, err))
	}
	withKind(u, obj)
	if md, ok := u["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
	}
	dropNullTimestamps(u)
	return u
}

// Served is what the API server returned for the objects of results, each
// CleanServed, as kubectl prints them: the objects deleted (pruned) have
// nothing to print and are left out.
func Served(results []Result) []map[string]any {
	served := make([]map[string]any, 0, len(results))
	for _, r := range results {
		if r.Object != nil {
			served = append(served, CleanServed(r.Object))
		}
	}
	return served
}

// withKind sets u's apiVersion and kind from obj's type when obj does not
// carry them, as the objects a typed client returns do not: a manifest
// without them cannot be applied.
func withKind(u map[string]any, obj runtime.Object) {
	if u["apiVersion"] != nil && u["kind"] != nil {
		return
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		panic(fmt.Sprintf("install: no kind known for %T: %v", obj, err))
	}
	u["apiVersion"], u["kind"] = gvks[0].GroupVersion().String(), gvks[0].Kind
}

func dropNullTimestamps(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if x == nil && k == "creationTimestamp" {
				delete(v, k)
				continue
			}
			if m, ok := x.(map[string]any); ok && k == "status" && len(m) == 0 {
				delete(v, k)
				continue
			}
			dropNullTimestamps(x)
		}
	case []any:
		for _, x := range v {
			dropNullTimestamps(x)
		}
	}
}

// WriteYAML writes objects as a YAML stream, "---" between documents.
func WriteYAML(w io.Writer, objs []map[string]any) error {
	var buf bytes.Buffer
	for i, o := range objs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteJSON writes objects as a v1 List, as kubectl prints several objects.
func WriteJSON(w io.Writer, objs []map[string]any) error {
	items := make([]any, len(objs))
	for i, o := range objs {
		items[i] = o
	}
	b, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "    ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// WriteManifests writes objs as format: "json" a v1 List (WriteJSON), otherwise a YAML
// stream (WriteYAML).
func WriteManifests(w io.Writer, format string, objs []map[string]any) error {
	if format == "json" {
		return WriteJSON(w, objs)
	}
	return WriteYAML(w, objs)
}

// PrintPlanned prints the objects a client dry run would apply: a line "REF created
// (dry run)" each without format, or their manifests (Clean) as format.
func PrintPlanned(w io.Writer, format string, list []runtime.Object) error {
	if format == "" {
		for _, obj := range list {
			if _, err := fmt.Fprintf(w, "%s created (dry run)\n", Ref(obj)); err != nil {
				return err
			}
		}
		return nil
	}
	cleaned := make([]map[string]any, 0, len(list))
	for _, obj := range list {
		cleaned = append(cleaned, Clean(obj))
	}
	return WriteManifests(w, format, cleaned)
}
