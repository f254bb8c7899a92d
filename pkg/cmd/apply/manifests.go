// Package apply implements "kubectl catalog apply -f", "diff -f" and "delete -f": the
// catalog's records as manifests kept in files (the catalog's own kinds, and those of the
// retired Service Catalog), made true with the same engine calls as the verbs.
package apply

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/declarative"
)

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
func (f *FileFlags) read(stdin io.Reader) ([]declarative.Document, error) {
	files, err := f.files()
	if err != nil {
		return nil, err
	}
	var docs []declarative.Document
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
		ds, err := declarative.Split(name, data)
		if err != nil {
			return nil, err
		}
		docs = append(docs, ds...)
	}
	return docs, nil
}
