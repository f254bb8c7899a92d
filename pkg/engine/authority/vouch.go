package authority

import (
	"context"
	"errors"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Vouch is what a person vouches for by writing, as her own, a record another person
// (or nobody anyone can verify) wrote: from then on the engine acts for it on her
// authority, so a Secret she may read goes where the record says. "sync broker" and
// "adopt" re-stamp records so; they show it and ask first.
type Vouch struct {
	Kind, Namespace, Name string
	// Was is the author the record names ("" none), Verified whether the trust policy in
	// force vouches for that name.
	Was      string
	Verified bool
	// Means lists what the engine does on the runner's authority once she is the author:
	// which Secret goes to which URL, which is copied where, which workload is changed.
	Means []string
	// Reaches says that the record names what her authority then reaches beyond the
	// record and its broker: a Secret whose contents the engine sends or copies, a
	// workload it changes, another namespace it lets bind, a broker's URL. The everyday
	// verbs ask only then (a record naming none of these gives a broker nothing of hers).
	Reaches bool
}

// Written says who wrote the record, as far as anyone can tell.
func (v Vouch) Written() string {
	switch {
	case v.Was == "":
		return "no author anyone can verify"
	case v.Verified:
		return fmt.Sprintf("written by %q", v.Was)
	}
	return fmt.Sprintf("names %q as its author, which no one can verify", v.Was)
}

// ErrNotConfirmed is the error of a command that would make its runner vouch for a
// record another person wrote, and was not confirmed: nothing was changed.
var ErrNotConfirmed = errors.New("not confirmed: nothing was changed")

// Vouching says what the runner vouches for by writing rec as her own intent, or nil when
// she vouches for nothing new: rec is her own already (written by her in this process, or
// verified as hers; without the trust policy, naming her as its author), or a broker of
// the catalog namespace, which only administrators write and the engine trusts as it is. It refuses (RefusedError) a record whose spec the
// runner could not have written herself, checked against her own rights as adopt checks
// it: a Secret she may not read she cannot vouch for.
func (auth *Authority) Vouching(ctx context.Context, rec v1alpha1.Record) (*Vouch, error) {
	if b, ok := rec.(*v1alpha1.Broker); ok && b.Namespace == auth.env().CatalogNamespace {
		return nil, nil
	}
	if auth.of(ctx, rec).self {
		return nil, nil
	}
	if auth.State(ctx).Token == "" && Tampered(rec) == "" {
		// No trust policy: no author can be verified, and the verbs act with their user's
		// own rights anyway. A record naming the runner as its author is taken as hers; one
		// naming another person (or nobody) is not.
		if id, err := auth.env().Platform.Identity(ctx); err == nil && id != nil && id.Username != "" && store.AuthorOf(rec).Username == id.Username {
			return nil, nil
		}
	}
	if Tampered(rec) != "" {
		return nil, Refused(ReasonRefusedAuthorUnverified, "%s %q %s", kindOf(rec), rec.GetName(), Tampered(rec))
	}
	if err := auth.checkAuthorship(Adopting(ctx, map[types.UID]bool{rec.GetUID(): true}), rec); err != nil {
		return nil, err
	}
	v := auth.vouch(ctx, rec)
	return &v, nil
}

// VouchingOver is Vouching for an everyday verb (update, touch, share, unshare, bind
// --rotate) about to write rec, which it changes, as its runner's intent: nil unless
// the trust policy in force verifies that another person wrote rec and rec names what
// the runner's authority then reaches (Vouch.Reaches). A record nobody can verify is
// left to the verbs' other checks and to adopt, as before; one naming nothing beyond
// itself and its broker gives nothing of hers away. Like Vouching, it refuses a record
// the runner could not have written herself.
func (auth *Authority) VouchingOver(ctx context.Context, rec v1alpha1.Record) (*Vouch, error) {
	if b := auth.of(ctx, rec); b.self || b.unverified != "" || b.author.Username == "" {
		return nil, nil
	}
	v := auth.vouch(ctx, rec)
	if !v.Reaches {
		return nil, nil
	}
	if err := auth.checkNamed(Adopting(ctx, map[types.UID]bool{rec.GetUID(): true}), rec); err != nil {
		return nil, err
	}
	return &v, nil
}

// checkNamed refuses rec when the runner could not have named what it names herself:
// its Secrets (parameters, keys copied), the namespaces it lets bind (she must be able to
// write the instance's record), the workloads it changes. ctx is marked Adopting(rec), so
// every check asks the runner's own rights. The broker and plan are the verb's to check
// as ever (a verb whose user may not read the broker's credentials leaves the call to
// reconcile), as is what checkAuthorship checks beyond these for adopt.
func (auth *Authority) checkNamed(ctx context.Context, rec v1alpha1.Record) error {
	secrets := auth.SecretsFor(rec)
	read := func(ns, name string) error {
		_, err := secrets(ctx, ns, name)
		return err
	}
	switch r := rec.(type) {
	case *v1alpha1.ServiceInstance:
		for _, pf := range r.Spec.ParametersFrom {
			if pf.SecretKeyRef != nil {
				if err := read(r.Namespace, pf.SecretKeyRef.Name); err != nil {
					return err
				}
			}
		}
		if len(r.Spec.SharedWith) > 0 {
			return auth.runnerMay(ctx, authorizationv1.ResourceAttributes{Namespace: r.Namespace, Verb: "update", Resource: "configmaps",
				Name: store.ConfigMapName(v1alpha1.KindServiceInstance, r.Name)})
		}
	case *v1alpha1.ServiceBinding:
		for _, pf := range r.Spec.ParametersFrom {
			if pf.SecretKeyRef != nil {
				if err := read(r.Namespace, pf.SecretKeyRef.Name); err != nil {
					return err
				}
			}
		}
		for _, tr := range r.Spec.SecretTransforms {
			if a := tr.AddKeysFrom; a != nil {
				if err := read(r.Namespace, a.SecretRef.Name); err != nil {
					return err
				}
			}
		}
		return auth.AuthorizeProjections(ctx, r)
	}
	return nil
}

// vouch describes what writing rec as the runner's own means.
func (auth *Authority) vouch(ctx context.Context, rec v1alpha1.Record) Vouch {
	au := store.AuthorOf(rec)
	b := auth.of(ctx, rec)
	v := Vouch{Kind: kindOf(rec), Namespace: rec.GetNamespace(), Name: rec.GetName(), Was: au.Username,
		Verified: au.Username != "" && b.unverified == ""}
	add := func(format string, args ...any) { v.Means = append(v.Means, fmt.Sprintf(format, args...)) }
	// reach is add for what the runner's authority reaches beyond the record.
	reach := func(format string, args ...any) { add(format, args...); v.Reaches = true }
	via := func(t Target, err error) string {
		if err != nil || t == nil || t.TargetBroker() == nil {
			return "its broker"
		}
		br := t.TargetBroker()
		return fmt.Sprintf("broker %q at %q", br.Name, br.Spec.URL)
	}
	params := func(from []v1alpha1.ParametersFromSource, to string) {
		for _, pf := range from {
			if r := pf.SecretKeyRef; r != nil && r.Key != "" {
				reach("parameters from Secret %q (key %q) go to %s", r.Name, r.Key, to)
			} else if r != nil {
				reach("parameters from Secret %q (every key) go to %s", r.Name, to)
			}
		}
	}
	switch r := rec.(type) {
	case *v1alpha1.Broker:
		v.Reaches = true
		if a := r.Spec.Auth; a != nil {
			add("its credentials, Secret %q in namespace %q, go to %q with every call", a.SecretRef.Name, r.Namespace, r.Spec.URL)
		}
		add("parameters from Secrets of namespace %q you may read go to %q with the calls of instances and bindings through it", r.Namespace, r.Spec.URL)
		switch {
		case r.Spec.InsecureSkipTLSVerify:
			add("the TLS certificate of %q is not verified (insecureSkipTLSVerify): whoever answers for that address gets them", r.Spec.URL)
		case r.Spec.CABundle != "":
			add("the TLS certificate of %q is verified against the record's own CA bundle, not the system's", r.Spec.URL)
		}
	case *v1alpha1.ServiceInstance:
		t, _, err := auth.env().InstanceTarget(ctx, r)
		to := via(t, err)
		if up := r.Spec.UserProvided; up != nil {
			reach("its credentials, Secret %q, are copied into the Secrets of its bindings", up.CredentialsSecret)
		} else {
			add("it is provisioned, updated and deprovisioned through %s", to)
		}
		params(r.Spec.ParametersFrom, to)
		for _, ns := range r.Spec.SharedWith {
			reach("namespace %q may bind it (its credentials go to bindings there)", ns)
		}
	case *v1alpha1.ServiceBinding:
		t, _, err := auth.env().BindingTarget(ctx, r)
		to := via(t, err)
		inst := r.Spec.InstanceName
		if r.Spec.InstanceNamespace != "" && r.Spec.InstanceNamespace != r.Namespace {
			inst = r.Spec.InstanceNamespace + "/" + inst
		}
		add("it binds instance %q through %s; the credentials go to Secret %q", inst, to, r.Spec.SecretName)
		params(r.Spec.ParametersFrom, to)
		for _, tr := range r.Spec.SecretTransforms {
			if a := tr.AddKeysFrom; a != nil {
				reach("the keys of Secret %q are copied into Secret %q", a.SecretRef.Name, r.Spec.SecretName)
			}
		}
		for _, p := range r.Spec.Projections {
			reach("%s %q is changed to read Secret %q", p.Kind, p.Name, r.Spec.SecretName)
		}
	}
	return v
}

func kindOf(rec v1alpha1.Record) string {
	switch rec.(type) {
	case *v1alpha1.Broker:
		return "broker"
	case *v1alpha1.ServiceInstance:
		return "instance"
	case *v1alpha1.ServiceBinding:
		return "binding"
	}
	return strings.ToLower(rec.GetObjectKind().GroupVersionKind().Kind)
}
