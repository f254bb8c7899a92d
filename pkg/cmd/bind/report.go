package bind

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

// printDryRun prints the binding that would be recorded and the workload changes: for
// --dry-run=server, the binding as the API server (validation and admission, the
// trust policy included) accepted it without storing it. No broker is called.
func (o *Options) printDryRun(res engine.BindResult) error {
	fmt.Fprintf(o.Streams.ErrOut, "Dry run (%s): binding %q of instance %q would be created; nothing was written.\n", o.DryRun, res.Name, res.Instance)
	if err := o.printObject(res.Binding); err != nil {
		return err
	}
	if res.Binding != nil {
		fmt.Fprint(o.Streams.ErrOut, secretKeysLine(res.Binding))
	}
	for _, c := range res.Changes {
		w := c.Workload
		if !c.Changed {
			fmt.Fprintf(o.Streams.ErrOut, "%s would not change: the Secret is already projected into it.\n", printers.WorkloadName(w))
			continue
		}
		verb := "would be changed"
		if o.DryRun == cmdutil.DryRunServer {
			verb = "would be changed (accepted by the API server as a dry run)"
		}
		fmt.Fprintf(o.Streams.ErrOut, "%s %s to receive the credentials as %s:\n", printers.WorkloadName(w), verb, printers.ProjectedAs(w, res.Name))
		if err := o.printObject(c.After); err != nil {
			return err
		}
	}
	return nil
}

func (o *Options) printObject(obj runtime.Object) error {
	if !o.Output.IsTable() {
		return o.Output.PrintObject(obj, o.Streams.Out)
	}
	return printYAML(o.Streams.Out, obj)
}

func printYAML(w io.Writer, obj runtime.Object) error {
	if b, ok := obj.(*v1alpha1.ServiceBinding); ok {
		b = b.DeepCopy()
		b.APIVersion, b.Kind = v1alpha1.SchemeGroupVersion.String(), v1alpha1.KindServiceBinding
		obj = b
	}
	data, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "---\n%s", data)
	return err
}

// report says where a new binding stands: what was created, where the credentials are
// and what to do next. (What the user must fix is the operation's error.)
func (o *Options) report(res engine.BindResult) error {
	r, b := res.Followed, res.Binding
	describe := fmt.Sprintf(`"kubectl catalog describe binding %s -n %s"`, res.Name, res.Namespace)
	switch {
	case r.State == engine.StateSettled:
		fmt.Fprintf(o.Streams.ErrOut, "binding %q created; credentials in Secret %q (keys: %s)\n", res.Name, printers.BindingSecretName(b), keysOf(b))
		for _, p := range b.Status.Projected {
			fmt.Fprintf(o.Streams.ErrOut, "projected into %s\n", printers.ProjectionSummary(p, b.Name))
		}
	case engine.WaitingForReconcile(b):
		fmt.Fprintf(o.Streams.ErrOut, "Binding %q is recorded: %s; it writes Secret %q. Follow it with %s.\n", res.Name, r.Message, res.SecretName, describe)
		o.SayWhenReconcileRuns()
	case !o.Wait.Wait:
		fmt.Fprintf(o.Streams.ErrOut, "The broker is working on binding %q (%s). Follow it with %s, or wait for it with \"%s\"; that, or \"kubectl catalog reconcile\", finishes it and writes Secret %q.\n",
			res.Name, r.Message, describe, engine.WaitCommand(v1alpha1.KindServiceBinding, res.Namespace, res.Name, engine.WaitForReady), res.SecretName)
	}
	return nil
}

// reportRotation says where a rotation stands.
func (o *Options) reportRotation(res engine.RotateResult) error {
	cur := res.Binding
	if !res.Rotated && engine.WaitingForReconcile(cur) {
		fmt.Fprintf(o.Streams.ErrOut, "The rotation of binding %q is recorded and waits for reconcile: %s. The old credentials stay in Secret %q until reconcile writes the new ones. Follow it with %s.\n",
			res.Name, res.Followed.Message, res.SecretName, fmt.Sprintf(`"kubectl catalog describe binding %s -n %s"`, res.Name, res.Namespace))
		return nil
	}
	if !res.Rotated {
		fmt.Fprintf(o.Streams.ErrOut, "The broker is working on the new credentials of binding %q (%s); the old ones stay in Secret %q until they are ready. Follow it with %s, or wait for it with \"%s\".\n",
			res.Name, res.Followed.Message, res.SecretName, fmt.Sprintf(`"kubectl catalog describe binding %s -n %s"`, res.Name, res.Namespace),
			engine.WaitCommand(v1alpha1.KindServiceBinding, res.Namespace, res.Name, engine.WaitForReady))
		return nil
	}
	fmt.Fprintf(o.Streams.ErrOut, "binding %q rotated: new binding id %s; credentials replaced in Secret %q (keys: %s)\n", res.Name, res.NewID, printers.BindingSecretName(cur), keysOf(cur))
	if res.OldPending {
		fmt.Fprintf(o.Streams.ErrOut, "The old binding id %s is still to be unbound at the broker (%s): \"kubectl catalog reconcile\" finishes it.\n", res.OldID, res.Followed.Message)
		return nil
	}
	fmt.Fprintf(o.Streams.ErrOut, "The old binding id %s was unbound at the broker.\n", res.OldID)
	return nil
}

func keysOf(b *v1alpha1.ServiceBinding) string {
	if b == nil || b.Status.Secret == nil || len(b.Status.Secret.Keys) == 0 {
		return "none"
	}
	keys := append([]string(nil), b.Status.Secret.Keys...)
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}
