package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/projection"
)

// What crosses into a consumer's workload is shaped by the consumer (docs/security.md,
// "Environment variables"):
//   - the credentials of an instance of another namespace (a shared instance, whose
//     owner chooses its keys: user-provided credentials, or the bind answers of a
//     namespace broker there) become environment variables only under a prefix the
//     consumer chose: a binding asking for them without one is refused, by bind and
//     apply before anything is recorded, and by the engine before it projects;
//   - a key that would become a loader or interpreter variable (projection.ForbiddenEnvName)
//     is left out of the Secret of a binding projected as environment variables, whoever
//     chose it and whenever it appears (a bind answer, a rotation, a copy of changed
//     user-provided credentials), with a Warning Event and the Ready condition naming it.

const (
	// ReasonRefusedUnprefixedEnv: the binding projects the credentials of another
	// namespace's instance as environment variables without a prefix.
	ReasonRefusedUnprefixedEnv = "RefusedUnprefixedEnv"
	// ReasonRefusedForbiddenEnv: the binding's Secret holds a key that its projection as
	// environment variables would make a loader or interpreter variable.
	ReasonRefusedForbiddenEnv = "RefusedForbiddenEnv"
	// ReasonEnvKeysLeftOut: keys of the credentials were left out of the binding's
	// Secret, which is projected as environment variables.
	ReasonEnvKeysLeftOut = "EnvKeysLeftOut"
)

// checkEnvSource refuses, for binding name in namespace, environment-variable
// projections without a prefix of the credentials of instance instNS/inst when instNS
// is another namespace, and prefixes under which every key is a loader variable.
func checkEnvSource(namespace, name, instNS, inst string, ps []v1alpha1.WorkloadProjection) error {
	for _, p := range ps {
		if err := projection.CheckEnvPrefix(p.EnvPrefix); err != nil {
			return refused(ReasonRefusedUnprefixedEnv, "binding %q: %v", name, err)
		}
	}
	if instNS == "" || instNS == namespace {
		return nil
	}
	p := projection.UnprefixedEnv(ps)
	if p == nil {
		return nil
	}
	return refused(ReasonRefusedUnprefixedEnv, "binding %q would expose the credentials of instance %q of namespace %q to %s %q as environment variables without a prefix: "+
		"their keys are chosen by that namespace (its credentials, or its broker), so they become variables only under a prefix of yours: "+
		"give one with --env-prefix (e.g. --env-prefix %s), or drop --env to mount them as files",
		name, inst, instNS, strings.ToLower(p.Kind), p.Name, suggestedPrefix(inst))
}

// suggestedPrefix is an example prefix for the variables of instance inst: its name in
// capitals, "_" for what a variable's name may not hold.
func suggestedPrefix(inst string) string {
	s := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, inst)
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		s = "SVC_" + s
	}
	return s + "_"
}

// checkBindingEnv is checkEnvSource for a binding record, and refuses to project as
// environment variables a Secret that holds a key they would make a loader or
// interpreter variable (a Secret written before the binding asked for variables).
func checkBindingEnv(b *v1alpha1.ServiceBinding) error {
	ns, inst := b.InstanceRef()
	if err := checkEnvSource(b.Namespace, b.Name, ns, inst, b.Spec.Projections); err != nil {
		return err
	}
	if b.Status.Secret == nil {
		return nil
	}
	if bad := projection.ForbiddenKeys(b.Status.Secret.Keys, b.Spec.Projections); len(bad) > 0 {
		return refused(ReasonRefusedForbiddenEnv, "Secret %q of binding %q holds %s, which as environment variables would change which code the workload runs (a loader or interpreter variable): "+
			"it was written before the binding asked for variables; write it again without them with %s, or drop --env",
			b.Spec.SecretName, b.Name, keyList(bad), hint.Quoted(b.Namespace, "bind", "--rotate", b.Name))
	}
	return nil
}

// shapeEnvData takes out of data, the Secret of b about to be written, the keys b's
// projections as environment variables may not receive, and returns them: keys that
// would become loader or interpreter variables, and, for a binding that projects the
// credentials of another namespace without a prefix (recorded before that was refused),
// keys its Secret did not hold before.
func shapeEnvData(b *v1alpha1.ServiceBinding, data map[string][]byte) []string {
	var out []string
	for _, k := range projection.ForbiddenKeys(slices.Collect(mapKeys(data)), b.Spec.Projections) {
		delete(data, k.Key)
		out = append(out, k.String())
	}
	if !b.CrossNamespace() || projection.UnprefixedEnv(b.Spec.Projections) == nil {
		return out
	}
	var had []string
	if b.Status.Secret != nil {
		had = b.Status.Secret.Keys
	}
	for _, k := range slices.Sorted(mapKeys(data)) {
		if !slices.Contains(had, k) {
			delete(data, k)
			out = append(out, k+" (new, from another namespace, without a prefix)")
		}
	}
	return out
}

func mapKeys(m map[string][]byte) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func keyList(keys []projection.LeftOutKey) string {
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = k.String()
	}
	if len(s) == 1 {
		return "key " + s[0]
	}
	return "keys " + strings.Join(s, ", ")
}

// envLeftOutNote ends the Ready message of a binding whose Secret was written without
// the keys left (shapeEnvData); "" when none were.
func envLeftOutNote(left []string) string {
	if len(left) == 0 {
		return ""
	}
	return fmt.Sprintf("; left out, as the workloads read the Secret as environment variables: %s (loader and interpreter variables are never projected, and the keys of another namespace only under a prefix of yours: rename a key with --rename-key, or give --env-prefix)",
		strings.Join(left, ", "))
}

// envLeftOutEvent records a Warning about the keys left out of b's Secret.
func (e *Engine) envLeftOutEvent(ctx context.Context, b *v1alpha1.ServiceBinding, left []string) {
	if len(left) == 0 {
		return
	}
	ns, name, ok := eventTarget(b)
	if !ok {
		return
	}
	ev := NewEvent(ns, name, EventWarning, ReasonEnvKeysLeftOut, "Bind",
		fmt.Sprintf("left out of Secret %q%s", b.Spec.SecretName, strings.TrimPrefix(envLeftOutNote(left), ";")))
	ev.UID = b.GetUID()
	e.event(ctx, ev)
}
