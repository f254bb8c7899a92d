package e2e

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gotest.tools/v3/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// catalogCall is what a "kubectl catalog ..." command asks for, as far as docChecks
// needs it.
type catalogCall struct {
	catalog bool // a kubectl catalog command
	verb    string
	name    string // the word after the verb, unless it is a flag
	ns      string // -n, or "default"
	all     bool   // -A
	args    []string
}

// parseCatalogCall reads kubectl's args.
func parseCatalogCall(args []string) catalogCall {
	c := catalogCall{ns: "default", args: args}
	if len(args) == 0 || args[0] != "catalog" {
		return c
	}
	c.catalog = true
	takesValue := map[string]bool{"-n": true, "--namespace": true, "--catalog-namespace": true, "--context": true, "--kubeconfig": true}
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-n" || a == "--namespace":
			if i+1 < len(args) {
				c.ns = args[i+1]
			}
		case strings.HasPrefix(a, "--namespace=") || strings.HasPrefix(a, "-n="):
			c.ns = a[strings.Index(a, "=")+1:]
		case a == "-A" || a == "--all-namespaces":
			c.all = true
		case c.verb == "" && !strings.HasPrefix(a, "-") && !takesValue[args[i-1]]:
			c.verb = a
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				c.name = args[i+1]
			}
		}
	}
	return c
}

// has reports whether the call has one of the flags (also as --flag=VALUE).
func (c catalogCall) has(flags ...string) bool {
	return slices.ContainsFunc(c.args, func(a string) bool {
		name, _, _ := strings.Cut(a, "=")
		return slices.Contains(flags, name)
	})
}

// value is the flag's value, if the call has it.
func (c catalogCall) value(flag string) (string, bool) {
	for i, a := range c.args {
		if a == flag && i+1 < len(c.args) {
			return c.args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, true
		}
	}
	return "", false
}

// docChecks check the outcome of the catalog's commands that change something: called
// before the command runs, each returns the check of its output and of the records once
// it exited 0.
var docChecks = map[string]func(s *docSession, c docCommand, call catalogCall) func(out string){
	// provision --wait: the instance is Ready.
	"provision": func(s *docSession, c docCommand, call catalogCall) func(string) {
		if !call.has("--wait") || call.has("--dry-run") {
			return nil
		}
		return func(string) {
			inst, err := s.st.Instances().Get(context.Background(), call.ns, call.name)
			assert.NilError(s.t, err, "%s: %s", c.at, c)
			assert.Check(s.t, inst.Status.Phase == v1alpha1.PhaseReady, "%s: %s: instance %s/%s is %s", c.at, c, call.ns, call.name, inst.Status.Phase)
		}
	},
	// bind: the binding's Secret exists.
	"bind": func(s *docSession, c docCommand, call catalogCall) func(string) {
		if call.has("--rotate", "--dry-run") {
			return nil
		}
		name, ok := call.value("--name")
		if !ok {
			name = call.name[strings.LastIndex(call.name, "/")+1:]
		}
		return func(string) {
			b, err := s.st.Bindings().Get(context.Background(), call.ns, name)
			assert.NilError(s.t, err, "%s: %s", c.at, c)
			_, err = s.admin.CoreV1().Secrets(call.ns).Get(context.Background(), b.Spec.SecretName, metav1.GetOptions{})
			assert.Check(s.t, err, "%s: %s: the Secret %s/%s of binding %s", c.at, c, call.ns, b.Spec.SecretName, name)
		}
	},
	// unbind BINDING: its Secret is gone, and with --wait its record.
	"unbind": func(s *docSession, c docCommand, call catalogCall) func(string) {
		if call.has("--all", "--name", "--dry-run") {
			return nil
		}
		b, err := s.st.Bindings().Get(context.Background(), call.ns, call.name)
		assert.NilError(s.t, err, "%s: %s", c.at, c)
		return func(string) {
			s.assertSecretGone(c, call.ns, b.Spec.SecretName)
			if call.has("--wait") {
				_, err := s.st.Bindings().Get(context.Background(), call.ns, call.name)
				assert.Check(s.t, store.IsNotFound(err), "%s: %s: binding %s/%s is still there: %v", c.at, c, call.ns, call.name, err)
			}
		}
	},
	// deprovision --yes --wait: the instance's record is gone, and its bindings and their
	// Secrets.
	"deprovision": func(s *docSession, c docCommand, call catalogCall) func(string) {
		if !call.has("--wait") || call.has("--dry-run") {
			return nil
		}
		bindings, err := s.st.Bindings().List(context.Background(), call.ns, store.Filter{})
		assert.NilError(s.t, err)
		bindings = slices.DeleteFunc(bindings, func(b *v1alpha1.ServiceBinding) bool {
			return b.Spec.InstanceName != call.name || (b.Spec.InstanceNamespace != "" && b.Spec.InstanceNamespace != call.ns)
		})
		return func(string) {
			_, err := s.st.Instances().Get(context.Background(), call.ns, call.name)
			assert.Check(s.t, store.IsNotFound(err), "%s: %s: instance %s/%s is still there: %v", c.at, c, call.ns, call.name, err)
			for _, b := range bindings {
				_, err := s.st.Bindings().Get(context.Background(), call.ns, b.Name)
				assert.Check(s.t, store.IsNotFound(err), "%s: %s: binding %s/%s is still there: %v", c.at, c, call.ns, b.Name, err)
				s.assertSecretGone(c, call.ns, b.Spec.SecretName)
			}
		}
	},
	// apply -f FILE --wait: every instance and binding the file names is Ready, and each
	// binding's Secret exists.
	"apply": func(s *docSession, c docCommand, call catalogCall) func(string) {
		file, ok := call.value("-f")
		if !ok || !call.has("--wait") || call.has("--dry-run") {
			return nil
		}
		return func(string) {
			for _, o := range s.manifestObjects(c, file, call.ns) {
				switch o.kind {
				case v1alpha1.KindServiceInstance:
					inst, err := s.st.Instances().Get(context.Background(), o.ns, o.name)
					assert.NilError(s.t, err, "%s: %s", c.at, c)
					assert.Check(s.t, inst.Status.Phase == v1alpha1.PhaseReady, "%s: %s: instance %s/%s is %s", c.at, c, o.ns, o.name, inst.Status.Phase)
				case v1alpha1.KindServiceBinding:
					b, err := s.st.Bindings().Get(context.Background(), o.ns, o.name)
					assert.NilError(s.t, err, "%s: %s", c.at, c)
					assert.Check(s.t, b.Status.Phase == v1alpha1.PhaseReady, "%s: %s: binding %s/%s is %s", c.at, c, o.ns, o.name, b.Status.Phase)
					_, err = s.admin.CoreV1().Secrets(o.ns).Get(context.Background(), b.Spec.SecretName, metav1.GetOptions{})
					assert.Check(s.t, err, "%s: %s: the Secret %s/%s of binding %s", c.at, c, o.ns, b.Spec.SecretName, o.name)
				}
			}
		}
	},
	// delete -f FILE --wait: every instance and binding the file names is gone, and each
	// binding's Secret.
	"delete": func(s *docSession, c docCommand, call catalogCall) func(string) {
		file, ok := call.value("-f")
		if !ok || !call.has("--wait") || call.has("--dry-run") {
			return nil
		}
		secrets := map[string]string{}
		objs := s.manifestObjects(c, file, call.ns)
		for _, o := range objs {
			if o.kind == v1alpha1.KindServiceBinding {
				b, err := s.st.Bindings().Get(context.Background(), o.ns, o.name)
				assert.NilError(s.t, err, "%s: %s", c.at, c)
				secrets[o.name] = b.Spec.SecretName
			}
		}
		return func(string) {
			for _, o := range objs {
				var err error
				switch o.kind {
				case v1alpha1.KindServiceInstance:
					_, err = s.st.Instances().Get(context.Background(), o.ns, o.name)
				case v1alpha1.KindServiceBinding:
					_, err = s.st.Bindings().Get(context.Background(), o.ns, o.name)
					s.assertSecretGone(c, o.ns, secrets[o.name])
				default:
					continue
				}
				assert.Check(s.t, store.IsNotFound(err), "%s: %s: %s %s/%s is still there: %v", c.at, c, o.kind, o.ns, o.name, err)
			}
		}
	},
	// reconcile (a run, not install or uninstall): it ends with nothing pending, in its
	// output and in the records of its namespaces.
	"reconcile": func(s *docSession, c docCommand, call catalogCall) func(string) {
		if call.name == "install" || call.name == "uninstall" || call.has("--dry-run", "-o", "--output") {
			return nil
		}
		return func(out string) {
			m := reconcileCounts.FindStringSubmatch(out)
			switch {
			case m == nil:
				assert.Check(s.t, strings.Contains(out, "Nothing to reconcile."), "%s: %s: neither a count of records nor \"Nothing to reconcile.\":\n%s", c.at, c, out)
			default:
				for _, part := range strings.Split(m[1], ", ") {
					assert.Check(s.t, strings.HasSuffix(part, " done"), "%s: %s ends with something pending: %q", c.at, c, m[0])
				}
			}
			ns := call.ns
			if call.all {
				ns = ""
			}
			pending, err := s.st.ListPending(context.Background(), ns)
			assert.NilError(s.t, err)
			assert.Check(s.t, len(pending) == 0, "%s: %s: records still have work: %+v", c.at, c, pending)
		}
	},
}

// docObject is a document of a manifest file: its kind, namespace and name.
type docObject struct{ kind, ns, name string }

// manifestObjects reads the documents of the manifest file the command names (in the
// directory the commands run in), namespace ns where a document names none.
func (s *docSession) manifestObjects(c docCommand, file, ns string) []docObject {
	data, err := os.ReadFile(filepath.Join(s.dir, file))
	assert.NilError(s.t, err, "%s: %s", c.at, c)
	var objs []docObject
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		var m struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		assert.NilError(s.t, yaml.Unmarshal([]byte(doc), &m), "%s: %s", c.at, file)
		if m.Kind == "" {
			continue
		}
		o := docObject{kind: m.Kind, ns: m.Metadata.Namespace, name: m.Metadata.Name}
		if o.ns == "" {
			o.ns = ns
		}
		objs = append(objs, o)
	}
	assert.Assert(s.t, len(objs) > 0, "%s: %s names no object", c.at, file)
	return objs
}

// reconcileCounts is the line a reconcile run by hand ends with: "3 records: 2 done, 1
// failed".
var reconcileCounts = regexp.MustCompile(`(?m)^\d+ records?: (.*?)(;.*)?$`)

func (s *docSession) assertSecretGone(c docCommand, ns, name string) {
	_, err := s.admin.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	assert.Check(s.t, apierrors.IsNotFound(err), "%s: %s: the Secret %s/%s is still there: %v", c.at, c, ns, name, err)
}

// tableStatus is the STATUS column of the row of name in a table kubectl catalog
// printed, "" when there is no such row.
func tableStatus(table, name string) string {
	sc := bufio.NewScanner(strings.NewReader(table))
	col := -1
	for sc.Scan() {
		line := sc.Text()
		if col < 0 {
			col = strings.Index(line, "STATUS")
			continue
		}
		if f := strings.Fields(line); len(f) > 0 && f[0] == name && len(line) > col {
			if f := strings.Fields(line[col:]); len(f) > 0 {
				return f[0]
			}
		}
	}
	return ""
}
