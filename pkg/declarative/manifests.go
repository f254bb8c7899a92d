// Package declarative is kubectl catalog's declarative side as a library: it reads
// manifests (the catalog's records, and the retired Service Catalog's) into objects, and
// says what of an object differs from the record it names.
package declarative

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// The API group of the retired Service Catalog, whose manifests apply reads too.
const SvcatAPIVersion = "servicecatalog.k8s.io/v1beta1"

// Document is one object of the manifests, with where it was read.
type Document struct {
	// File is the file it was read from ("-" for standard input); Index is its place
	// among the file's documents, from 1.
	File  string
	Index int
	Obj   *unstructured.Unstructured
	// JSON is the object as JSON, for a strict decode into a record type.
	JSON []byte
}

// Where names the document in messages.
func (d Document) Where() string {
	if d.File == "-" {
		return fmt.Sprintf("standard input, document %d", d.Index)
	}
	return fmt.Sprintf("%s, document %d", d.File, d.Index)
}

// Split decodes the YAML or JSON documents of a file; the items of a List (as "get -o
// yaml" prints several records) are documents of their own.
func Split(name string, data []byte) ([]Document, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs []Document
	for i := 1; ; i++ {
		var obj map[string]any
		if err := d.Decode(&obj); err != nil {
			if err == io.EOF {
				return docs, nil
			}
			return nil, fmt.Errorf("%s: %w", Document{File: name, Index: i}.Where(), err)
		}
		if len(obj) == 0 {
			i--
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "List" && u.GetAPIVersion() == "v1" {
			items, _, _ := unstructured.NestedSlice(obj, "items")
			for _, item := range items {
				m, ok := item.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s: an item of the List is not an object", Document{File: name, Index: i}.Where())
				}
				doc, err := newDocument(name, i, m)
				if err != nil {
					return nil, err
				}
				docs = append(docs, doc)
			}
			continue
		}
		doc, err := newDocument(name, i, obj)
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
}

func newDocument(name string, i int, obj map[string]any) (Document, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return Document{}, fmt.Errorf("%s: %w", Document{File: name, Index: i}.Where(), err)
	}
	return Document{File: name, Index: i, Obj: &unstructured.Unstructured{Object: obj}, JSON: raw}, nil
}

// Strict decodes the document into a record type, refusing fields the type does not
// have (a typo would otherwise be dropped silently).
func (d Document) Strict(into any) error {
	dec := json.NewDecoder(bytes.NewReader(d.JSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("%s %q: %w", d.Obj.GetKind(), d.Obj.GetName(), err)
	}
	return nil
}

// ownAPIVersion is the apiVersion of the catalog's records.
var ownAPIVersion = v1alpha1.SchemeGroupVersion.String()
