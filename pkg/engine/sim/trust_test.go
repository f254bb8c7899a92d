package sim

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

// The trust policy and verified authors (-sim.trust). The simulated cluster holds the
// trust policy's state as "kubectl catalog init" installs it (the ValidatingAdmission-
// Policy of pkg/trust, its binding and the token ConfigMap, which every process's
// engine reads through trust.Reader, as the commands do), and its API server does the
// policy's admission on every write of a record's ConfigMap (admit, which mirrors the
// policy's CEL rule by rule) and answers SubjectAccessReviews from one RBAC model (may),
// the same one that refuses the processes' own requests. Every process writes as its
// user: alice (dev, and every namespace), alice2 (dev), bob (team-b), mallory (her
// namespace t, and ConfigMaps only in dev: she may write dev's records but not read its
// Secrets), and reconcile's ServiceAccount, which runs without --trust-namespace-writers
// (reconcile.Options.TrustUnverifiedAuthors false), so that its checks of each record's
// verified author run as in a cluster.
//
// dev holds Secret "vault", which alice's records name (parametersFrom, a binding's
// addKeysFrom) and mallory may not read. Mallory tries what docs/security.md's threat
// model lists for authorship: records of her own in dev naming the vault (written by the
// verbs on her command and by hand), records and spec edits naming alice as their author
// (refused by the policy), alice's records edited to name the vault under her own name,
// records without the current token, records stripped of their labels.
//
// Checked as it happens: a Secret of the vault read for a record, or its value sent to a
// broker, only for a record that a user who may read it wrote (the record's verified
// author, as some version of its spec the process could have read names it: a re-send
// repeats what a first send carried); a call made for its record's verified author (one
// of a spec the process could have read) or for no one when reconcile makes it, never
// for reconcile's ServiceAccount, and for its user when a verb makes it; after every step: the verified author of every
// record is the user who wrote its spec (what the policy guarantees, checked against the
// writes the model admitted); and reconcile is never a record's author. At quiescence
// mallory deletes her own records and alice writes back the spec of each record mallory
// took over, and every record outside t is settled, as elsewhere.
//
// The policy removed and installed again, its token created anew, during a seed, and the
// owners' adopt: renew_test.go.
//
// To see the invariants fail, break the check they guard: make
// authority.Authority.Authorize return nil for a verified author the Authorizer refuses
// (the "if !ans.allowed" branch), and a seed of -sim.trust reports a vault read for one
// of mallory's records; make authority.Authority.OriginatingIdentity send the runner's
// identity for an unverified author, and a seed reports a call carrying reconcile's own
// (docs/engine.md).

var trustPolicy = flag.Bool("sim.trust", false, "install the trust policy: the API server admits records' ConfigMap writes as the policy does, answers SubjectAccessReviews, and reconcile checks each record's verified author (no --trust-namespace-writers); mallory attacks dev's records")

const (
	vaultSecret = "vault"
	vaultKey    = "json"
	// reconcileSA is reconcile's ServiceAccount.
	reconcileSA = "system:serviceaccount:catalog-system:kubectl-catalog-reconcile"
)

// trustState is what the -sim.trust world keeps.
type trustState struct {
	token  string
	canary string
	// tokens are every token the world's policy was in force with, in order (the last
	// is token); renewals counts the renewals (renew_test.go).
	tokens   []string
	renewals int
	renew    renewState
	// seq counts the record writes the API server admitted; versions are the specs each
	// record ("namespace/name" of the record) had, in order.
	seq      int
	versions map[string][]specVersion
	// started is the seq when each process began its current task; startedRenewals,
	// the renewals before it.
	started         map[*proc]int
	startedRenewals map[*proc]int
	// sent are the request ids whose first send carried the vault's value for a record
	// whose author may read it.
	sent map[string]bool
	// refused counts the record writes the policy refused; admitted, the writes of a
	// spec or author annotations it admitted, of each process.
	refused  int
	admitted map[*proc]int
}

// specVersion is one spec of a record as written: who wrote it (the requesting user),
// the author its annotations name, whether the record kept its labels and whether the
// spec names the vault. Whether its author is verified depends on the token in force
// when that is asked (verifiedUnder): a renewal of the token strands it.
type specVersion struct {
	seq      int
	writer   string
	author   string
	labelled bool
	vault    bool
	// data and token are the spec's bytes and token as stored.
	data, token string
	// adopted: an adopt re-stamped it (renew_test.go).
	adopted bool
}

// verifiedUnder reports whether the version's author is verified under token: it names
// an author, carries that token and kept its labels.
func (v specVersion) verifiedUnder(token string) bool {
	return v.author != "" && token != "" && v.token == token && v.labelled
}

// setupTrust installs the trust policy, its binding and its token, and the vault.
func (w *world) setupTrust() {
	if !*trustPolicy {
		return
	}
	ctx := context.Background()
	w.trust = &trustState{
		token:    fmt.Sprintf("token-%d", w.seed),
		canary:   fmt.Sprintf("vault-canary-%08x", w.rng.Uint32()),
		versions: map[string][]specVersion{}, started: map[*proc]int{}, startedRenewals: map[*proc]int{}, sent: map[string]bool{}, admitted: map[*proc]int{},
	}
	w.trust.tokens = []string{w.trust.token}
	w.trust.renew = newRenewState(w.seed) // renew_test.go
	adm := w.cluster.Core.AdmissionregistrationV1()
	if _, err := adm.ValidatingAdmissionPolicies().Create(ctx, trust.Policy(), metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	if _, err := adm.ValidatingAdmissionPolicyBindings().Create(ctx, trust.Binding(), metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	if _, err := w.cluster.Core.CoreV1().ConfigMaps(storetest.CatalogNamespace).Create(ctx,
		trust.TokenConfigMap(storetest.CatalogNamespace, w.trust.token), metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	// The vault's value must never reach a ConfigMap or an Event (invariant 9).
	w.book.secrets = append(w.book.secrets, w.trust.canary)
	w.putVault()
}

// putVault creates the vault in dev, unless it is there or dev is being deleted.
func (w *world) putVault() bool {
	if !w.creatableIn("dev") {
		return false
	}
	data := fmt.Sprintf(`{"vault":%q}`, w.trust.canary)
	_, err := w.cluster.Core.CoreV1().Secrets("dev").Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: vaultSecret},
		Data:       map[string][]byte{vaultKey: []byte(data), "extra": []byte(w.trust.canary)},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return false
	}
	if err != nil {
		panic(err)
	}
	return true
}

// addTrustProcs adds alice's process naming the vault and mallory's attacks on dev.
func (w *world) addTrustProcs() {
	if *trustPolicy {
		w.procs = append(w.procs, w.newProc("alice-vault", modelProc, "dev"), w.newProc("mallory-dev", modelProc, "dev"))
	}
}

// user is who the process is to the API server.
func (p *proc) user() string {
	if !*trustPolicy {
		return p.name
	}
	switch p.name {
	case "alice-vault":
		return "alice"
	case "mallory-edits", "mallory-dev":
		return "mallory"
	case "bob-edits":
		return "bob"
	}
	if p.kind == reconciler {
		return reconcileSA
	}
	return p.name
}

// groups are the process's user's groups.
func (p *proc) groups() []string {
	switch {
	case !*trustPolicy:
		return nil
	case p.kind == reconciler:
		return []string{"system:serviceaccounts", "system:serviceaccounts:catalog-system", "system:authenticated"}
	}
	return []string{"system:authenticated"}
}

// identity is who the process's store writes as.
func (p *proc) identity(context.Context) (*store.Identity, error) {
	return &store.Identity{Username: p.user(), Groups: p.groups()}, nil
}

// trustStore are the options of a process's store in the trust world: it stamps the
// token of the process's view of the policy's state (shared with the engine's checks).
func (p *proc) trustStore(v *trustView) []store.Option {
	if v == nil {
		return nil
	}
	return []store.Option{store.WithTrustToken(v.Token)}
}

// trustReader is a new view of the policy's state for an engine of the process; nil
// without -sim.trust (renew_test.go).
func (p *proc) trustReader() *trustView {
	if p.w.trust == nil || !p.underPolicy() {
		return nil
	}
	return &trustView{w: p.w}
}

// configureTrust gives an engine the policy's state and the Authorizer.
func (p *proc) configureTrust(c *engine.Config, v *trustView) {
	if v == nil {
		return
	}
	c.Trust = v
	c.Authorizer = simAuthorizer{p}
	c.Brokers = fake.Brokers{Client: trustClient{Client: p.w.broker, p: p}}
}

// trustsWriters is reconcile.Options.TrustUnverifiedAuthors of the process: a run by
// hand with --trust-namespace-writers on a cluster without the policy, never with it.
func (p *proc) trustsWriters() bool { return !p.underPolicy() }

// underPolicy reports whether the process works on a cluster with the trust policy: the
// world's, with -sim.trust; the new cluster of the move world (move_test.go) has none,
// so records moved from a cluster with the policy to one without it are modelled too.
func (p *proc) underPolicy() bool { return *trustPolicy && !p.onNew() }

// simAuthorizer answers SubjectAccessReviews (and SelfSubjectAccessReviews) from the
// world's RBAC model. Only users who may create SubjectAccessReviews ask.
type simAuthorizer struct{ p *proc }

func (a simAuthorizer) Allowed(_ context.Context, user string, _ []string, attrs authorizationv1.ResourceAttributes) (bool, string, error) {
	if ok, _ := may(a.p.user(), "create", "authorization.k8s.io", "subjectaccessreviews", ""); !ok {
		return false, "", apierrors.NewForbidden(schema.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, "",
			fmt.Errorf("sim: user %s may not create subjectaccessreviews", a.p.user()))
	}
	ok, why := may(user, attrs.Verb, attrs.Group, attrs.Resource, attrs.Namespace)
	return ok, why, nil
}

func (a simAuthorizer) SelfAllowed(_ context.Context, attrs authorizationv1.ResourceAttributes) (bool, string, error) {
	ok, why := may(a.p.user(), attrs.Verb, attrs.Group, attrs.Resource, attrs.Namespace)
	return ok, why, nil
}

// ownNamespaces are the namespaces where a user may do anything.
var ownNamespaces = map[string][]string{"alice2": {"dev"}, "bob": {"team-b"}, "mallory": {"t"}}

// may is the world's RBAC: what user may do in namespace ns. Reconcile's ServiceAccount,
// alice and the administrator may do anything; alice2, bob and mallory anything in their
// own namespaces, read records (ConfigMaps) anywhere and list them in the catalog
// namespace, and read the cluster brokers' credentials there; mallory may also write
// ConfigMaps in dev, not read its Secrets.
func may(user, verb, group, resource, ns string) (bool, string) {
	own, limited := ownNamespaces[user]
	switch {
	case !limited:
		return true, ""
	case slices.Contains(own, ns):
		return true, ""
	case group != "":
		return false, fmt.Sprintf("sim RBAC: %s has no role for %s.%s in namespace %q", user, resource, group, ns)
	case resource == "configmaps" && (verb == "get" || verb == "list" && ns == storetest.CatalogNamespace):
		return true, ""
	case resource == "secrets" && verb == "get" && ns == storetest.CatalogNamespace:
		return true, ""
	case user == "mallory" && ns == "dev" && resource == "configmaps":
		return true, ""
	}
	return false, fmt.Sprintf("sim RBAC: %s may not %s %s in namespace %q", user, verb, resource, ns)
}

// trustRBAC refuses a request of the process that the RBAC model refuses.
func (p *proc) trustRBAC(verb string, gr schema.GroupResource, ns, name string) error {
	if ok, why := may(p.user(), verb, gr.Group, gr.Resource, ns); !ok {
		return apierrors.NewForbidden(gr, name, errors.New(why))
	}
	return nil
}

// recordKind is the kind a ConfigMap's name makes it a record of, and the record's name
// (the policy's matchCondition "record": a name prefix of store.RecordPrefixes); "" for
// a ConfigMap that is no record.
func recordKind(name string) (kind, record string) {
	for prefix, k := range store.RecordPrefixes() {
		if strings.HasPrefix(name, prefix) {
			return kind + k, strings.TrimPrefix(name, prefix)
		}
	}
	return "", ""
}

// admit is the trust policy's admission of a write of ConfigMap cm (old: the stored one,
// nil for a CREATE) by the process's user. It mirrors the CEL of pkg/trust.Policy.
func (p *proc) admit(op string, cm, old *corev1.ConfigMap) error {
	w := p.w
	if w.trust == nil || !p.underPolicy() || old != nil && cm.ResourceVersion != "" && cm.ResourceVersion != old.ResourceVersion {
		// The API server checks an update's resourceVersion before admission: the write
		// is a conflict.
		return nil
	}
	name := cm.Name
	if name == "" {
		name = cm.GenerateName
	}
	// matchConditions "record": the name starts with a record kind's prefix.
	kind, _ := recordKind(name)
	if kind == "" {
		return nil
	}
	ann := func(o *corev1.ConfigMap, k string) string {
		if o == nil {
			return ""
		}
		return o.Annotations[k]
	}
	label := func(o *corev1.ConfigMap, k string) string {
		if o == nil {
			return ""
		}
		return o.Labels[k]
	}
	data := func(o *corev1.ConfigMap) (string, bool) {
		if o == nil || o.Data == nil {
			return "", false
		}
		v, ok := o.Data[store.DataKey]
		return v, ok
	}
	authorKeys := []string{store.AnnotationAuthor, store.AnnotationAuthorGroups, store.AnnotationTrustToken}
	// variables.authored (exprAuthored): a CREATE holding a record or carrying an author
	// annotation; an UPDATE changing the record, changing an author annotation, or
	// putting the managed-by label on a ConfigMap that lacked it.
	var authored bool
	if op == "CREATE" {
		_, has := data(cm)
		authored = has || slices.ContainsFunc(authorKeys, func(k string) bool { return ann(cm, k) != "" })
	} else {
		nd, _ := data(cm)
		od, _ := data(old)
		authored = nd != od || label(old, store.LabelManagedBy) != store.ManagedBy ||
			slices.ContainsFunc(authorKeys, func(k string) bool { return ann(cm, k) != ann(old, k) })
	}
	// variables.stamped (exprStamped): the author annotations name the requesting user
	// and her groups, in either form of store.EncodeGroups.
	user, groups := p.user(), p.groups()
	joinable := !slices.ContainsFunc(groups, func(g string) bool { return strings.Contains(g, ",") || strings.HasPrefix(g, "[") })
	quoted := make([]string, len(groups))
	for i, g := range groups {
		quoted[i] = `"` + strings.ReplaceAll(strings.ReplaceAll(g, `\`, `\\`), `"`, `\"`) + `"`
	}
	gs := ann(cm, store.AnnotationAuthorGroups)
	stamped := ann(cm, store.AnnotationAuthor) == user &&
		(gs == strings.Join(groups, ",") && joinable || gs == "["+strings.Join(quoted, ",")+"]")
	// variables.labelled (exprLabelled): the managed-by label and the kind label the name
	// says.
	labelled := label(cm, store.LabelManagedBy) == store.ManagedBy && label(cm, store.LabelKind) == kind
	// variables.keepsLabels (exprKeepsLabels): an UPDATE keeps a record's managed-by
	// label and its kind label.
	keepsLabels := op != "UPDATE" ||
		(label(old, store.LabelManagedBy) != store.ManagedBy || label(cm, store.LabelManagedBy) == store.ManagedBy) &&
			(label(old, store.LabelKind) == "" || label(cm, store.LabelKind) == label(old, store.LabelKind))
	refuse := func(why string) error {
		w.trust.refused++
		p.apiFaults++
		w.logf("%-14s admission refused %s of ConfigMap %s/%s: %s", p.name, strings.ToLower(op), cm.Namespace, name, why)
		if user != "mallory" {
			// Only mallory writes what the policy refuses: the engine never writes
			// another's spec or author annotations, nor takes a label off.
			w.fail("the trust policy refused the %s of ConfigMap %s/%s by %s (%s): %s", strings.ToLower(op), cm.Namespace, name, p.name, user, why)
		}
		return apierrors.NewForbidden(configMaps, name, fmt.Errorf("ValidatingAdmissionPolicy %s: %s", trust.PolicyName, why))
	}
	// The first validation (exprValidation): !authored || stamped.
	if authored && !stamped {
		return refuse(fmt.Sprintf("its spec and author annotations may only be written by the user the annotation names (%q); you are %s", ann(cm, store.AnnotationAuthor), user))
	}
	// The second validation (exprLabelsValidation): keepsLabels && (!authored || labelled).
	if !keepsLabels || authored && !labelled {
		return refuse("a record keeps its managed-by and kind labels")
	}
	// The third validation (exprMigratedValidation): a write that sets or changes the
	// migrated-from annotation is stamped, or its user may read the Service Catalog's
	// objects of the record's kind in its namespace.
	if ann(cm, store.AnnotationMigratedFrom) != ann(old, store.AnnotationMigratedFrom) && !stamped {
		res := map[string]string{v1alpha1.KindServiceInstance: "serviceinstances", v1alpha1.KindServiceBinding: "servicebindings"}[kind]
		if res == "" {
			res = "servicebrokers"
		}
		if ok, why := may(user, "get", trust.SvcatGroup, res, cm.Namespace); !ok {
			return refuse("its migrated-from annotation may only be set by its author or a Service Catalog reader: " + why)
		}
	}
	if authored {
		w.trust.admitted[p]++
	}
	return nil
}

// noteWrite records the spec a write admitted left on record ConfigMap ns/name, written
// by user.
func (w *world) noteWrite(ns, name, user string) {
	if w.trust == nil {
		return
	}
	kind, rec := recordKind(name)
	if kind != v1alpha1.KindServiceInstance && kind != v1alpha1.KindServiceBinding {
		return
	}
	cm, err := w.cluster.Core.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return
	}
	key := ns + "/" + rec
	vs := w.trust.versions[key]
	if n := len(vs); n > 0 && vs[n-1].data == cm.Data[store.DataKey] && vs[n-1].author == cm.Annotations[store.AnnotationAuthor] &&
		vs[n-1].token == cm.Annotations[store.AnnotationTrustToken] {
		return
	}
	w.trust.seq++
	v := specVersion{seq: w.trust.seq, writer: user, author: cm.Annotations[store.AnnotationAuthor],
		data: cm.Data[store.DataKey], token: cm.Annotations[store.AnnotationTrustToken]}
	v.labelled = cm.Labels[store.LabelManagedBy] == store.ManagedBy
	if kind == v1alpha1.KindServiceInstance {
		if i, err := w.checker.Instances().Get(context.Background(), ns, rec); err == nil {
			v.vault = namesVault(i.Spec.ParametersFrom, nil)
		}
	} else if b, err := w.checker.Bindings().Get(context.Background(), ns, rec); err == nil {
		v.vault = namesVault(b.Spec.ParametersFrom, b.Spec.SecretTransforms)
	}
	w.checkAdoptWrite(key, vs, &v) // renew_test.go
	w.trust.versions[key] = append(vs, v)
}

func namesVault(from []v1alpha1.ParametersFromSource, trs []v1alpha1.SecretTransform) bool {
	for _, f := range from {
		if f.SecretKeyRef != nil && f.SecretKeyRef.Name == vaultSecret {
			return true
		}
	}
	for _, t := range trs {
		if t.AddKeysFrom != nil && t.AddKeysFrom.SecretRef.Name == vaultSecret {
			return true
		}
	}
	return false
}

// trustTaskStarted notes when p began its task.
func (w *world) trustTaskStarted(p *proc) {
	if w.trust != nil {
		w.trust.started[p] = w.trust.seq
		w.trust.startedRenewals[p] = w.trust.renewals
	}
}

// vouched reports whether some spec of record rec (namespace/name) that p could have
// read in its task, one current at some time since the task began, names the vault and
// has a verified author who may read it: verified under the token of p's view of the
// policy's state, which is the current token or, for a task begun before the token was
// created anew, the one it replaced (renew_test.go).
func (w *world) vouched(p *proc, rec string) (bool, string) {
	vs := w.trust.versions[rec]
	start := w.trust.started[p]
	token, why := p.actingToken()
	if why != "" {
		return false, why
	}
	var seen []string
	for i, v := range vs {
		if i+1 < len(vs) && vs[i+1].seq <= start {
			continue // replaced before the task began
		}
		verified := v.verifiedUnder(token)
		seen = append(seen, fmt.Sprintf("author %q (verified %v, token %s, written by %s, names the vault %v)", v.author, verified, v.token, v.writer, v.vault))
		if ok, _ := may(v.author, "get", "", "secrets", "dev"); ok && verified && v.vault {
			return true, ""
		}
	}
	if len(seen) == 0 {
		return false, "no spec of it was written through the API server"
	}
	return false, "its specs since the task began: " + strings.Join(seen, "; ")
}

// checkSecretRead is checked as a process reads Secret ns/name: the vault is read only
// for a record whose verified author may read it (reconcile), or by a user who may.
func (w *world) checkSecretRead(p *proc, ns, name string) {
	if w.trust == nil || ns != "dev" || name != vaultSecret || !p.underPolicy() {
		return
	}
	if p.kind != reconciler {
		if ok, _ := may(p.user(), "get", "", "secrets", ns); !ok {
			w.fail("%s read Secret dev/%s, which its user %s may not read", p.name, vaultSecret, p.user())
		}
		return
	}
	if ok, why := w.vouched(p, p.record); !ok {
		w.fail("%s read Secret dev/%s for record %q, whose author could not have read it: %s", p.name, vaultSecret, p.record, why)
	}
}

// checkVaultSent is checked as a provision or update reaches the broker: its parameters
// carry the vault's value only for a record whose verified author may read it, or as a
// re-send of a request whose write-ahead was checked so (checkVaultCopied).
func (w *world) checkVaultSent(method, instanceID, requestID string, params json.RawMessage) {
	if w.trust == nil || !strings.Contains(string(params), w.trust.canary) {
		return
	}
	if w.trust.sent[requestID] && requestID != "" {
		return
	}
	if ok, why := w.mayCarryVault(w.current()); !ok {
		w.fail("%s of instance %s (request %s) carries Secret dev/%s's value for record %q, whose author could not have read it: %s",
			method, instanceID, requestID, vaultSecret, procRecord(w.current()), why)
		return
	}
	w.trust.sent[requestID] = true
}

// checkVaultCopied is checked as a process creates Secret s: a call's request Secret
// (its write-ahead of parameters from Secrets) holds the vault's value only for a record
// whose verified author may read it; the call's re-sends repeat it.
func (w *world) checkVaultCopied(p *proc, s *corev1.Secret) {
	if w.trust == nil || !strings.HasPrefix(s.Name, "catalog-request-") || p != nil && !p.underPolicy() {
		return
	}
	carries := false
	for _, v := range s.Data {
		carries = carries || strings.Contains(string(v), w.trust.canary)
	}
	for _, v := range s.StringData {
		carries = carries || strings.Contains(v, w.trust.canary)
	}
	if !carries {
		return
	}
	if ok, why := w.mayCarryVault(p); !ok {
		w.fail("%s writes Secret dev/%s's value into request Secret %s/%s for record %q, whose author could not have read it: %s",
			p.name, vaultSecret, s.Namespace, s.Name, p.record, why)
		return
	}
	w.trust.sent[strings.TrimPrefix(s.Name, "catalog-request-")] = true
}

// mayCarryVault reports whether p may carry the vault's value for the record it works on.
func (w *world) mayCarryVault(p *proc) (bool, string) {
	switch {
	case p == nil:
		return false, "no process sent it"
	case p.kind != reconciler:
		return may(p.user(), "get", "", "secrets", "dev")
	}
	return w.vouched(p, p.record)
}

func procRecord(p *proc) string {
	if p == nil {
		return ""
	}
	return p.record
}

// checkAuthors is checked after every step: the verified author of every record (its
// author annotation, under the current token or one it replaced, with its labels) is the
// user who wrote its spec, as the API server admitted the write: what the policy
// guarantees, which was in force all along.
func (w *world) checkAuthors() {
	if w.trust == nil {
		return
	}
	for _, rec := range slices.Sorted(maps.Keys(w.trust.versions)) {
		vs := w.trust.versions[rec]
		v := vs[len(vs)-1]
		if slices.ContainsFunc(w.trust.tokens, v.verifiedUnder) && v.author != v.writer {
			w.fail("record %s names %q as its verified author, but %s wrote its spec (the policy admitted it)", rec, v.author, v.writer)
		}
		if v.author == reconcileSA {
			w.fail("record %s has reconcile's ServiceAccount as its author: reconcile wrote its spec as its own", rec)
		}
	}
}

// trustTask is the next task of alice's process naming the vault, or of mallory's in dev.
func (w *world) trustTask(p *proc) (string, func(context.Context) error) {
	if !w.faults {
		return "nothing", func(context.Context) error { return nil }
	}
	follow := w.follow()
	fromVault := []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: vaultSecret, Key: vaultKey}}}
	addVault := []v1alpha1.SecretTransform{{AddKeysFrom: &v1alpha1.AddKeysFromTransform{SecretRef: v1alpha1.SecretReference{Name: vaultSecret}}}}
	devInstances := append(slices.Clone(instanceNames), "vault-0", "vault-1")
	if p.name == "alice-vault" {
		inst := []string{"vault-0", "vault-1"}[w.rng.IntN(2)]
		switch w.rng.IntN(5) {
		case 0, 1:
			return "provision " + inst + " --parameters-from-secret " + vaultSecret, func(ctx context.Context) error {
				_, err := p.eng.Provision(ctx, engine.ProvisionRequest{Namespace: "dev", Name: inst, Class: "db", Plan: "small", Follow: follow,
					Parameters: engine.ParametersInput{FromSecret: fromVault}})
				return err
			}
		case 2:
			return "deprovision " + inst, func(ctx context.Context) error {
				_, err := p.eng.Deprovision(ctx, engine.DeprovisionRequest{Namespace: "dev", Name: inst, Follow: follow})
				return err
			}
		case 3:
			return "bind vb-0 to " + inst + " --add-keys-from " + vaultSecret, func(ctx context.Context) error {
				_, err := p.eng.Bind(ctx, engine.BindRequest{Namespace: "dev", Instance: inst, Name: "vb-0", Transforms: addVault, Follow: follow})
				return err
			}
		}
		return "unbind vb-0", func(ctx context.Context) error {
			_, err := p.eng.Unbind(ctx, engine.UnbindRequest{Namespace: "dev", Bindings: []string{"vb-0"}, Follow: follow})
			return err
		}
	}
	if w.rng.IntN(100) >= w.rates.tenant {
		return "nothing", func(context.Context) error { return nil }
	}
	mal := fmt.Sprintf("mal-%d", w.rng.IntN(2))
	target := devInstances[w.rng.IntN(len(devInstances))]
	switch w.rng.IntN(8) {
	case 0:
		// Her own command: the verb acts with her rights, and she may not read the vault.
		return "provision dev/" + mal + " --parameters-from-secret " + vaultSecret, func(ctx context.Context) error {
			_, err := p.eng.Provision(ctx, engine.ProvisionRequest{Namespace: "dev", Name: mal, Class: "db", Plan: "small", Follow: follow,
				Parameters: engine.ParametersInput{FromSecret: fromVault}})
			return err
		}
	case 1:
		return "bind dev/" + mal + "-b to " + target + " --add-keys-from " + vaultSecret, func(ctx context.Context) error {
			_, err := p.eng.Bind(ctx, engine.BindRequest{Namespace: "dev", Instance: target, Name: mal + "-b", Transforms: addVault, Follow: follow})
			return err
		}
	case 2, 3:
		// A record written by hand naming the vault: as herself, as alice (the policy
		// refuses it), or as herself without the current token.
		as, token := "mallory", true
		switch w.rng.IntN(3) {
		case 0:
			as = "alice"
		case 1:
			token = false
		}
		return fmt.Sprintf("write instance dev/%s naming the vault (author %s, token %v)", mal, as, token), func(ctx context.Context) error {
			return w.writeRecord(ctx, p, as, token, func(st *store.Store) error {
				src, err := st.Instances().Get(ctx, "dev", target)
				if err != nil {
					return err
				}
				x := &v1alpha1.ServiceInstance{TypeMeta: src.TypeMeta, ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: mal}, Spec: *src.Spec.DeepCopy()}
				x.Spec.ExternalID = fmt.Sprintf("mal-%08x", w.rng.Uint32())
				x.Spec.ParametersFrom, x.Spec.SharedWith = fromVault, nil
				_, err = st.Instances().Create(store.WithIntent(ctx), x)
				return err
			})
		}
	case 4, 5:
		// Another's record edited to name the vault: keeping alice as its author (the
		// policy refuses it), or as her own.
		as := []string{"alice", "mallory"}[w.rng.IntN(2)]
		return fmt.Sprintf("edit instance dev/%s to name the vault (author %s)", target, as), func(ctx context.Context) error {
			return w.writeRecord(ctx, p, as, true, func(st *store.Store) error {
				x, err := st.Instances().Get(ctx, "dev", target)
				if err != nil || x.Spec.UserProvided != nil {
					return err
				}
				x.Spec.ParametersFrom = fromVault
				_, err = st.Instances().Update(store.WithIntent(ctx), x)
				return err
			})
		}
	case 6:
		// A binding of alice's edited to add the vault's keys to its credentials.
		bind := []string{"app-0", "app-1", "vb-0"}[w.rng.IntN(3)]
		as := []string{"alice", "mallory"}[w.rng.IntN(2)]
		return fmt.Sprintf("edit binding dev/%s to add the vault's keys (author %s)", bind, as), func(ctx context.Context) error {
			return w.writeRecord(ctx, p, as, true, func(st *store.Store) error {
				x, err := st.Bindings().Get(ctx, "dev", bind)
				if err != nil {
					return err
				}
				x.Spec.SecretTransforms = addVault
				_, err = st.Bindings().Update(store.WithIntent(ctx), x)
				return err
			})
		}
	}
	// A record's labels removed (the policy refuses it).
	return "remove the labels of instance dev/" + target, func(ctx context.Context) error {
		return w.writeRecord(ctx, p, "mallory", true, func(st *store.Store) error {
			x, err := st.Instances().Get(ctx, "dev", target)
			if err != nil {
				return err
			}
			x.Labels = maps.Clone(x.Labels)
			delete(x.Labels, store.LabelManagedBy)
			_, err = st.Instances().Update(ctx, x)
			return err
		})
	}
}

// writeRecord writes as mallory (p), through a store stamping author as (with the
// current token or without): what the policy must refuse (another user named, labels
// removed) fails the seed if it is admitted.
func (w *world) writeRecord(ctx context.Context, p *proc, as string, token bool, write func(*store.Store) error) error {
	opts := []store.Option{store.WithClock(p.now), store.WithIdentity(func(context.Context) (*store.Identity, error) {
		return &store.Identity{Username: as, Groups: []string{"system:authenticated"}}, nil
	})}
	if token {
		opts = append(opts, store.WithTrustToken(func(context.Context) (string, error) { return w.trust.token, nil }))
	}
	st := store.New(simClient{Interface: w.cluster.Core, p: p}, w.cluster.Metadata, opts...)
	before := w.trust.admitted[p]
	err := write(st)
	if w.trust.admitted[p] != before && as != p.user() {
		w.fail("the trust policy admitted a record %s wrote naming %s as its author", p.user(), as)
	}
	if err == nil && strings.HasPrefix(p.task, "remove the labels") {
		w.fail("the trust policy admitted a write removing a record's managed-by label")
	}
	return err
}

// trustQuiesce is what people do once the faults stopped: mallory deletes her records in
// dev, and alice writes back as her own the spec of each record mallory took over
// (without the vault where it is no record of alice's naming it).
func (w *world) trustQuiesce() {
	if w.trust == nil {
		return
	}
	// The deletion of namespace dev (-sim.nsdelete) took the vault with it: its owner
	// creates it again, as the records waiting on it say to.
	if w.putVault() {
		w.logf("%-14s Secret dev/%s created again", "alice", vaultSecret)
	}
	ctx := context.Background()
	st := store.New(w.cluster.Core, w.cluster.Metadata, store.WithClock(func() time.Time { return w.t }),
		store.WithIdentity(func(context.Context) (*store.Identity, error) {
			return &store.Identity{Username: "alice", Groups: []string{"system:authenticated"}}, nil
		}), store.WithTrustToken(func(context.Context) (string, error) { return w.trust.token, nil }))
	for _, rec := range slices.Sorted(maps.Keys(w.trust.versions)) {
		ns, name, _ := strings.Cut(rec, "/")
		vs := w.trust.versions[rec]
		last := vs[len(vs)-1]
		if ns != "dev" || last.writer != "mallory" && last.author != "mallory" {
			continue
		}
		if strings.HasPrefix(name, "mal-") {
			for _, kind := range []string{v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding} {
				cm := store.ConfigMapName(kind, name)
				if err := w.cluster.Core.CoreV1().ConfigMaps(ns).Delete(ctx, cm, metav1.DeleteOptions{}); err == nil {
					w.logf("%-14s kubectl delete configmap %s/%s", "mallory", ns, cm)
				}
			}
			continue
		}
		keep := strings.HasPrefix(name, "vault-") || name == "vb-0"
		if x, err := st.Instances().Get(ctx, ns, name); err == nil {
			if !keep {
				x.Spec.ParametersFrom = nil
			}
			if _, err := st.Instances().Update(store.WithIntent(ctx), x); err == nil {
				w.logf("%-14s writes back instance %s as hers", "alice", rec)
				w.noteWrite(ns, store.ConfigMapName(v1alpha1.KindServiceInstance, name), "alice")
			}
		}
		if x, err := st.Bindings().Get(ctx, ns, name); err == nil {
			if !keep {
				x.Spec.SecretTransforms = nil
			}
			if _, err := st.Bindings().Update(store.WithIntent(ctx), x); err == nil {
				w.logf("%-14s writes back binding %s as hers", "alice", rec)
				w.noteWrite(ns, store.ConfigMapName(v1alpha1.KindServiceBinding, name), "alice")
			}
		}
	}
}

// trustClient is a process's broker client in the trust world: as each call of a record
// leaves, the originating identity it carries is checked (checkIdentity).
type trustClient struct {
	osb.Client
	p *proc
}

func (c trustClient) Provision(ctx context.Context, r *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
	c.p.checkIdentity("Provision", r.InstanceID, r.RequestOptions)
	return c.Client.Provision(ctx, r)
}

func (c trustClient) Update(ctx context.Context, r *osb.UpdateRequest) (*osb.UpdateResponse, error) {
	c.p.checkIdentity("Update", r.InstanceID, r.RequestOptions)
	return c.Client.Update(ctx, r)
}

func (c trustClient) Deprovision(ctx context.Context, r *osb.DeprovisionRequest) (*osb.DeprovisionResponse, error) {
	c.p.checkIdentity("Deprovision", r.InstanceID, r.RequestOptions)
	return c.Client.Deprovision(ctx, r)
}

func (c trustClient) Bind(ctx context.Context, r *osb.BindRequest) (*osb.BindResponse, error) {
	c.p.checkIdentity("Bind", r.BindingID, r.RequestOptions)
	return c.Client.Bind(ctx, r)
}

func (c trustClient) Unbind(ctx context.Context, r *osb.UnbindRequest) (*osb.UnbindResponse, error) {
	c.p.checkIdentity("Unbind", r.BindingID, r.RequestOptions)
	return c.Client.Unbind(ctx, r)
}

// checkIdentity is checked as a call leaves a process: a verb's call is made for its
// user; reconcile's for the verified author of a spec of the record it could have read,
// or for no one, never for reconcile itself (a broker that authorizes by the header must
// never see reconcile's rights for a request a tenant wrote: docs/security.md).
func (p *proc) checkIdentity(method, id string, o osb.RequestOptions) {
	w := p.w
	who := o.OriginatingIdentity
	if o.OmitOriginatingIdentity || who == nil {
		return
	}
	if p.kind != reconciler {
		if who.Username != p.user() {
			w.fail("%s %s by %s (user %s) is made for %q", method, id, p.name, p.user(), who.Username)
		}
		return
	}
	if who.Username == p.user() {
		w.fail("%s %s by %s for record %q carries reconcile's own identity", method, id, p.name, p.record)
		return
	}
	record := p.record
	if method == "Bind" || method == "Unbind" {
		record = w.rebindCallRecord(id, record) // rebind_test.go
	}
	token, why := p.actingToken()
	if why != "" {
		w.fail("%s %s by %s for record %q is made for %q: %s", method, id, p.name, record, who.Username, why)
		return
	}
	for i, v := range w.trust.versions[record] {
		vs := w.trust.versions[record]
		if i+1 < len(vs) && vs[i+1].seq <= w.trust.started[p] {
			continue
		}
		if v.verifiedUnder(token) && v.author == who.Username {
			w.noteAdoptedCall(record, v) // renew_test.go
			return
		}
	}
	w.fail("%s %s by %s for record %q is made for %q, who is the verified author (under token %s) of no spec of it since the task began", method, id, p.name, record, who.Username, token)
}

// TestSim_TrustWorld runs a few seeds of -sim.trust with -sim.crossns as part of the
// default seeds (make soak runs many more), and checks that a seed of it gives one trace;
// a run naming seeds leaves it out.
func TestSim_TrustWorld(t *testing.T) {
	if *firstSeed != 0 || *seeds != 0 {
		t.Skip("a run of chosen seeds")
	}
	count := 12
	if testing.Short() {
		count = 4
	}
	flags := []*bool{trustPolicy, crossNamespace}
	was := make([]bool, len(flags))
	for i, f := range flags {
		was[i], *f = *f, true
	}
	defer func() {
		for i, f := range flags {
			*f = was[i]
		}
	}()
	var reached renewReached
	for seed, w := range runSeeds(1, count) {
		reached.add(w.trust.renew.reached)
		if len(w.failures) > 0 {
			t.Errorf("seed %d: %s\nreplay: %s\n%s",
				seed, w.failures[0], replay("-sim.trust -sim.crossns", seed), tail(w.trace, 60))
		}
	}
	sameTraces(t)
	// And a few seeds that each create the token anew (renew_test.go), which must reach
	// an adopt re-stamping a record that reconcile then acts for.
	renewWas := *renewAll
	*renewAll = true
	defer func() { *renewAll = renewWas }()
	for seed, w := range runSeeds(1, count/3) {
		reached.add(w.trust.renew.reached)
		if len(w.failures) > 0 {
			t.Errorf("seed %d: %s\nreplay: %s\n%s",
				seed, w.failures[0], replay("-sim.trust -sim.crossns -sim.renew", seed), tail(w.trace, 60))
		}
	}
	t.Logf("the trust token created anew: %+v", reached)
	reached.check(t)
	sameTraces(t)
}
