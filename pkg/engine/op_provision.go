package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/credentials"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// InstanceResult is what provision, update, revert and touch did, for the verb to print.
type InstanceResult struct {
	// Result is where the drive left the instance; zero when nothing was written (a dry
	// run, or nothing to change).
	Result
	// DryRun is the record a dry run would write: for DryRunServer, as the API server
	// accepted it without storing it. Nil when the operation was not a dry run.
	DryRun *v1alpha1.ServiceInstance
	// Summary says what a dry run would have done ("instance "db" of postgresql/hobby
	// would be provisioned in namespace "dev"").
	Summary string
	// Changes say what was changed (or would be, for a dry run), for update and revert.
	Changes []string
	// Unchanged: there was nothing to change, so nothing was written or driven; a
	// Follow.Note said so.
	Unchanged bool
	// Rebind: the update recorded a rotation of the instance's bindings after it
	// ("update --rebind"; its outcome is the BindingsRebound condition).
	Rebind bool
}

// Limits are the consumer limits of an instance a user gave (--max-bindings,
// --allowed-namespaces); a nil field was not given and is left as it is.
type Limits struct {
	// MaxBindings is the most bindings the instance may have, from every namespace
	// together; 0 means no limit.
	MaxBindings *int32
	// AllowedNamespaces are the only namespaces whose bindings may use the instance; an
	// empty list means any namespace it is shared with. Blank and repeated names are
	// dropped and the list is sorted.
	AllowedNamespaces *[]string
}

// check refuses limits no instance can have.
func (l Limits) check() error {
	if l.MaxBindings != nil && *l.MaxBindings < 0 {
		return inputErrorf("--max-bindings must be 0 (no limit) or more, not %d", *l.MaxBindings)
	}
	return nil
}

// apply writes the limits given into spec and says what changed.
func (l Limits) apply(spec *v1alpha1.ServiceInstanceSpec) []string {
	var changes []string
	if l.MaxBindings != nil {
		var m *int32
		if *l.MaxBindings > 0 {
			v := *l.MaxBindings
			m = &v
		}
		if (m == nil) != (spec.MaxBindings == nil) || (m != nil && *m != *spec.MaxBindings) {
			spec.MaxBindings = m
			if m == nil {
				changes = append(changes, "no limit on bindings")
			} else {
				changes = append(changes, fmt.Sprintf("at most %d bindings", *m))
			}
		}
	}
	if l.AllowedNamespaces != nil {
		allowed := cleanNamespaces(*l.AllowedNamespaces)
		if !slices.Equal(allowed, spec.AllowedNamespaces) {
			spec.AllowedNamespaces = allowed
			if len(allowed) == 0 {
				changes = append(changes, "bindings from any namespace it is shared with")
			} else {
				changes = append(changes, "bindings only from namespaces "+strings.Join(allowed, ", "))
			}
		}
	}
	return changes
}

// cleanNamespaces drops blank and repeated names and sorts the rest; nil when none is
// left.
func cleanNamespaces(names []string) []string {
	var clean []string
	for _, ns := range names {
		ns = strings.TrimSpace(ns)
		if ns != "" && !slices.Contains(clean, ns) {
			clean = append(clean, ns)
		}
	}
	slices.Sort(clean)
	return clean
}

// ProvisionRequest is what provision is asked for.
type ProvisionRequest struct {
	Namespace, Name string
	// Class and Plan are names as the user gave them (see marketplace.Resolve); an
	// empty Plan is fine when the class has one plan.
	Class, Plan string
	// ExternalID is the OSB instance id; a fresh one when empty.
	ExternalID string
	Parameters ParametersInput
	Limits     Limits
	// Metadata are labels and annotations the record is created with ("kubectl catalog
	// apply" gives a manifest's); keys of the catalog's own prefix are dropped.
	Metadata RecordMetadata
	// RebindOnUpdate is the instance's spec.rebindOnUpdate (--rebind); empty: Never.
	RebindOnUpdate v1alpha1.RebindPolicy
	// Ask asks for a missing class, plan or required parameter; nil when no one can
	// be asked.
	Ask    Asker
	DryRun DryRun
	Follow Follow
}

// Provision records a new instance of a class and plan and drives it (see Follow): the
// class and plan resolved, the parameters checked against the plan's schema, the limits
// applied, the record created as the user's intent. A dry run writes nothing (the
// server one sends the create as a dry run) and calls no broker.
func (e *Engine) Provision(ctx context.Context, req ProvisionRequest) (InstanceResult, error) {
	if err := req.Limits.check(); err != nil {
		return InstanceResult{}, err
	}
	if !req.DryRun.Enabled() {
		e.readAhead(ctx, req.Namespace, true)
	}
	// A provision that asks the user questions or only shows the record checks the name
	// first; any other finds a taken name in its create.
	if req.Ask != nil || req.DryRun == DryRunClient {
		if err := (instanceVerbs{e}).checkNameFree(ctx, req.Namespace, req.Name); err != nil {
			return InstanceResult{}, err
		}
	}
	inst, err := e.PrepareInstance(ctx, InstanceRequest{
		Namespace: req.Namespace, Name: req.Name, Class: req.Class, Plan: req.Plan,
		ExternalID: req.ExternalID, Parameters: req.Parameters, Ask: req.Ask,
	})
	if err != nil {
		return InstanceResult{}, err
	}
	class, plan := inst.Spec.ClassExternalName, inst.Spec.PlanExternalName
	req.Limits.apply(&inst.Spec)
	inst.Spec.RebindOnUpdate = req.RebindOnUpdate
	req.Metadata.apply(&inst.ObjectMeta)
	if req.DryRun.Enabled() {
		return instanceVerbs{e}.dryRunCreate(ctx, req.DryRun, inst, fmt.Sprintf("instance %q of %s/%s would be provisioned in namespace %q", req.Name, class, plan, req.Namespace))
	}
	req.Follow.note("Provisioning instance %q of %s/%s in namespace %q...", req.Name, class, plan, req.Namespace)
	created, err := e.cfg.Store.Instances().Create(req.DryRun.writes(ctx), inst)
	if err != nil {
		return InstanceResult{}, createError(err, req.Namespace, req.Name)
	}
	_ = e.ClaimSpecIDs(ctx, created) // the instance's own step makes it otherwise
	r, err := e.FollowInstance(ctx, req.Namespace, req.Name, "provision", created, req.Follow)
	return InstanceResult{Result: r}, err
}

// RecordMetadata are the labels and annotations a user gives a new record. They are free
// for anyone who may write the record's ConfigMap, so they decide nothing the engine does;
// selectors (get -l, apply --prune) use them.
type RecordMetadata struct {
	Labels, Annotations map[string]string
}

// apply sets m's labels and annotations on a record about to be created, except those of
// the catalog's own prefix (the store sets those).
func (m RecordMetadata) apply(meta *metav1.ObjectMeta) {
	meta.Labels = withoutCatalogKeys(meta.Labels, m.Labels)
	meta.Annotations = withoutCatalogKeys(meta.Annotations, m.Annotations)
}

// withoutCatalogKeys adds the entries of from that are not the catalog's own to into.
func withoutCatalogKeys(into, from map[string]string) map[string]string {
	for k, v := range from {
		if IsCatalogKey(k) {
			continue
		}
		if into == nil {
			into = map[string]string{}
		}
		into[k] = v
	}
	return into
}

// IsCatalogKey reports whether a label or annotation key is one the catalog sets itself.
func IsCatalogKey(k string) bool {
	prefix, _, ok := strings.Cut(k, "/")
	return ok && (prefix == v1alpha1.GroupName || strings.HasSuffix(prefix, "."+v1alpha1.GroupName) || k == "app.kubernetes.io/managed-by")
}

// checkNameFree fails when an instance of the name exists already.
func (e instanceVerbs) checkNameFree(ctx context.Context, namespace, name string) error {
	_, err := e.cfg.Store.Instances().Get(ctx, namespace, name)
	if err == nil {
		return nameTaken(namespace, name)
	}
	if !store.IsNotFound(err) {
		return err
	}
	return nil
}

// nameTaken says that an instance of the name exists already.
func nameTaken(namespace, name string) error {
	return fmt.Errorf(`instance %q already exists in namespace %q: see it with "kubectl catalog describe instance %s -n %s", wait for what is under way on it with "%s", or pick another name`,
		name, namespace, name, namespace, WaitCommand(v1alpha1.KindServiceInstance, namespace, name, WaitForReady))
}

// createError is the error of an instance record's create: a taken name is said as
// nameTaken says it.
func createError(err error, namespace, name string) error {
	if store.IsAlreadyExists(err) {
		return nameTaken(namespace, name)
	}
	return err
}

// dryRunCreate is the result of a dry run of inst's create: for DryRunServer, the
// record as the API server (validation and admission, the trust policy included)
// accepted it without storing it. No broker is called.
func (e instanceVerbs) dryRunCreate(ctx context.Context, d DryRun, inst *v1alpha1.ServiceInstance, summary string) (InstanceResult, error) {
	out := inst
	if d == DryRunServer {
		created, err := e.cfg.Store.Instances().Create(d.writes(ctx), inst)
		if err != nil {
			return InstanceResult{}, fmt.Errorf("instance %q would not be provisioned: %w", inst.Name, createError(err, inst.Namespace, inst.Name))
		}
		out = created
	}
	return InstanceResult{DryRun: out, Summary: summary}, nil
}

// CredentialsInput are the credentials of a user-provided instance as its user gave
// them. Values are never kept in a record, and never in an error.
type CredentialsInput struct {
	// Read gets the credentials the verb reads itself (a JSON object of a flag, a file
	// or standard input, or values asked for in a terminal) as Secret data; nil when
	// the verb reads none. The engine calls it once, after the checks that need no
	// credentials.
	Read func() (map[string][]byte, error)
	// FromSecret names a Secret of the instance's namespace whose every key is a
	// credential (copied; the Secret is not changed).
	FromSecret string
	// SyslogDrainURL and RouteServiceURL are given to bindings as the credentials
	// syslog_drain_url and route_service_url.
	SyslogDrainURL, RouteServiceURL string
}

// sources counts the credential sources given (Read and FromSecret).
func (c CredentialsInput) sources() int {
	n := 0
	if c.Read != nil {
		n++
	}
	if c.FromSecret != "" {
		n++
	}
	return n
}

// given reports whether anything of the credentials was given.
func (c CredentialsInput) given() bool {
	return c.sources() > 0 || c.SyslogDrainURL != "" || c.RouteServiceURL != ""
}

// readCredentials returns the credentials c gives, as Secret data; nil when no source
// was given (only the URLs, for an update). A Secret of FromSecret is read in
// namespace.
func (e instanceVerbs) readCredentials(ctx context.Context, namespace string, c CredentialsInput) (map[string][]byte, error) {
	switch {
	case c.Read != nil:
		return c.Read()
	case c.FromSecret != "":
		s, err := e.cfg.Store.GetSecret(ctx, namespace, c.FromSecret)
		if store.IsNotFound(err) {
			return nil, fmt.Errorf("--credentials-from-secret: Secret %q not found in namespace %q", c.FromSecret, namespace)
		}
		if err != nil {
			return nil, fmt.Errorf("--credentials-from-secret: %w", err)
		}
		if len(s.Data) == 0 {
			return nil, fmt.Errorf("--credentials-from-secret: Secret %q in namespace %q holds no keys", c.FromSecret, namespace)
		}
		return s.Data, nil
	}
	return nil, nil
}

// withURLs sets the URL credentials of c on top of data (a copy), refusing a key the
// credentials have already unless replace.
func (c CredentialsInput) withURLs(data map[string][]byte, replace bool) (map[string][]byte, error) {
	out := make(map[string][]byte, len(data)+2)
	for k, v := range data {
		out[k] = v
	}
	for k, v := range map[string]string{credentials.KeySyslogDrainURL: c.SyslogDrainURL, credentials.KeyRouteServiceURL: c.RouteServiceURL} {
		if v == "" {
			continue
		}
		if _, ok := out[k]; ok && !replace {
			return nil, inputErrorf("the credentials have a key %q already: give it there, or with its flag, not both", k)
		}
		out[k] = []byte(v)
	}
	return out, nil
}

// UserProvidedRequest is what provision --user-provided is asked for.
type UserProvidedRequest struct {
	Namespace, Name string
	Credentials     CredentialsInput
	Limits          Limits
	DryRun          DryRun
	Follow          Follow
}

// ProvisionUserProvided records a user-provided instance, writes its credentials
// Secret (owned by the record) and drives it to Ready; no broker is called. Nothing is
// left behind when the credentials cannot be read or written. A dry run writes nothing
// (the server one sends the record's create as a dry run, and writes no Secret).
func (e *Engine) ProvisionUserProvided(ctx context.Context, req UserProvidedRequest) (InstanceResult, error) {
	if err := req.Limits.check(); err != nil {
		return InstanceResult{}, err
	}
	if req.Credentials.sources() == 0 {
		return InstanceResult{}, inputErrorf("--user-provided needs its credentials: give --credentials-json, --credentials-file, --credentials-from-secret or --credentials-keys")
	}
	if err := (instanceVerbs{e}).checkNameFree(ctx, req.Namespace, req.Name); err != nil {
		return InstanceResult{}, err
	}
	data, err := instanceVerbs{e}.readCredentials(ctx, req.Namespace, req.Credentials)
	if err != nil {
		return InstanceResult{}, err
	}
	if data, err = req.Credentials.withURLs(data, false); err != nil {
		return InstanceResult{}, err
	}
	secret := CredentialsSecretName(req.Name)
	if _, err := e.cfg.Store.GetSecret(ctx, req.Namespace, secret); err == nil {
		return InstanceResult{}, fmt.Errorf("Secret %q already exists in namespace %q, and the credentials of user-provided instance %q are kept under that name: pick another instance name, or remove the Secret", secret, req.Namespace, req.Name)
	} else if !store.IsNotFound(err) {
		return InstanceResult{}, err
	}
	inst := NewUserProvidedInstance(req.Namespace, req.Name, v1alpha1.UserProvidedService{CredentialsSecret: secret})
	inst.Spec.ExternalID = e.namespaceBoundID(ctx, req.Namespace)
	req.Limits.apply(&inst.Spec)
	keys := strings.Join(credentials.Keys(data), ", ")
	if req.DryRun.Enabled() {
		return instanceVerbs{e}.dryRunCreate(ctx, req.DryRun, inst, fmt.Sprintf("user-provided instance %q would be recorded in namespace %q, its credentials (%s) in Secret %q", req.Name, req.Namespace, keys, secret))
	}
	req.Follow.note("Recording user-provided instance %q in namespace %q (credentials: %s)...", req.Name, req.Namespace, keys)
	created, err := e.cfg.Store.Instances().Create(req.DryRun.writes(ctx), inst)
	if err != nil {
		return InstanceResult{}, createError(err, req.Namespace, req.Name)
	}
	if err := e.WriteUserProvidedCredentials(ctx, created, data); err != nil {
		if aerr := e.AbandonInstance(ctx, created); aerr != nil {
			return InstanceResult{}, fmt.Errorf("instance %q not provisioned: its credentials could not be written (%w), and its record could not be removed (%v): remove it with %s", req.Name, err, aerr, hint.Quoted(req.Namespace, "deprovision", req.Name, "--abandon"))
		}
		return InstanceResult{}, fmt.Errorf("instance %q not provisioned: its credentials could not be written to Secret %q: %w", req.Name, secret, err)
	}
	r, err := e.FollowInstance(ctx, req.Namespace, req.Name, "provision", nil, req.Follow)
	return InstanceResult{Result: r}, err
}
