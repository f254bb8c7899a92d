// Package apply implements "kubectl catalog apply -f", "diff -f" and "delete -f": the
// catalog's records as manifests kept in files (the catalog's own kinds, and those of the
// retired Service Catalog), made true with the same engine calls as the verbs.
package apply

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// The API group of the retired Service Catalog, whose manifests apply reads too.
const svcatAPIVersion = "servicecatalog.k8s.io/v1beta1"

// document is one object of the manifests, with where it was read.
type document struct {
	// File is the file it was read from ("-" for standard input); Index is its place
	// among the file's documents, from 1.
	File  string
	Index int
	Obj   *unstructured.Unstructured
	// JSON is the object as JSON, for a strict decode into a record type.
	JSON []byte
}

// where names the document in messages.
func (d document) where() string {
	if d.File == "-" {
		return fmt.Sprintf("standard input, document %d", d.Index)
	}
	return fmt.Sprintf("%s, document %d", d.File, d.Index)
}

// FileFlags are -f and -R.
type FileFlags struct {
	Filenames []string
	Recursive bool
}

// Validate checks the flags without I/O.
func (f *FileFlags) Validate() error {
	if len(f.Filenames) == 0 {
		return cmdutil.UsageErrorf(`-f is required: give a file, a directory, or "-" for standard input`)
	}
	stdin := 0
	for _, n := range f.Filenames {
		if n == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return cmdutil.UsageErrorf(`-f - (standard input) can be given once`)
	}
	return nil
}

// files lists the files the flags name: each file, and the .yaml, .yml and .json files
// of each directory (of its subdirectories too with -R), in name order.
func (f *FileFlags) files() ([]string, error) {
	var out []string
	for _, name := range f.Filenames {
		if name == "-" {
			out = append(out, name)
			continue
		}
		st, err := os.Stat(name)
		if err != nil {
			return nil, cmdutil.UsageErrorf("-f %s: %v", name, errors.Unwrap(err))
		}
		if !st.IsDir() {
			out = append(out, name)
			continue
		}
		var found []string
		err = filepath.WalkDir(name, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != name && !f.Recursive {
					return filepath.SkipDir
				}
				return nil
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".yaml", ".yml", ".json":
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("-f %s: %w", name, err)
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	return out, nil
}

// read reads every document of the files the flags name; stdin is "-".
func (f *FileFlags) read(stdin io.Reader) ([]document, error) {
	files, err := f.files()
	if err != nil {
		return nil, err
	}
	var docs []document
	for _, name := range files {
		var data []byte
		if name == "-" {
			data, err = io.ReadAll(stdin)
		} else {
			data, err = os.ReadFile(name)
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read %s: %w", name, err)
		}
		ds, err := split(name, data)
		if err != nil {
			return nil, err
		}
		docs = append(docs, ds...)
	}
	return docs, nil
}

// split decodes the YAML or JSON documents of a file; the items of a List (as "get -o
// yaml" prints several records) are documents of their own.
func split(name string, data []byte) ([]document, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs []document
	for i := 1; ; i++ {
		var obj map[string]any
		if err := d.Decode(&obj); err != nil {
			if err == io.EOF {
				return docs, nil
			}
			return nil, fmt.Errorf("%s: %w", document{File: name, Index: i}.where(), err)
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
					return nil, fmt.Errorf("%s: an item of the List is not an object", document{File: name, Index: i}.where())
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

func newDocument(name string, i int, obj map[string]any) (document, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return document{}, fmt.Errorf("%s: %w", document{File: name, Index: i}.where(), err)
	}
	return document{File: name, Index: i, Obj: &unstructured.Unstructured{Object: obj}, JSON: raw}, nil
}

// strict decodes the document into a record type, refusing fields the type does not
// have (a typo would otherwise be dropped silently).
func (d document) strict(into any) error {
	dec := json.NewDecoder(bytes.NewReader(d.JSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("%s %q: %w", d.Obj.GetKind(), d.Obj.GetName(), err)
	}
	return nil
}

// ownAPIVersion is the apiVersion of the catalog's records.
var ownAPIVersion = v1alpha1.SchemeGroupVersion.String()
