package sim

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

// The trust token created anew during a seed (-sim.trust). In some seeds (one in four,
// every seed with -sim.renew) an administrator runs "kubectl catalog reconcile uninstall
// --remove-trust-policy" and then "kubectl catalog init", once or twice, at a step the
// seed draws before the faults stop: the token ConfigMap, the policy's binding and the
// policy are deleted as pkg/install.UninstallTrust deletes them, then the policy and its
// binding are created again and, since they had to be, the token ConfigMap with a new
// token (pkg/install's applyToken). Nothing moves in between, so the policy is in force
// all along, under the old token and then the new one. Every record stamped with the old
// token is stranded: its author is no longer verified.
//
// Each engine reads the policy's state once, at its first use, and keeps it for its life
// (trustView): a verb's engine lives for its command, a reconcile process's for its run,
// and one whose token was replaced is made anew before its next run. That stands for the
// engine's cache of the state and the reader's, kept on the wall clock (10 s and 2 s),
// which the simulation cannot time: a command or a run under way when the token changes
// may go on under the old one, as a real one does for a while, and may stamp it on what
// it writes, which strands that record too.
//
// The owners answer as docs/security.md tells them: after a renewal alice (or alice2)
// adopts dev, bob team-b, mallory t and, in the brokers world, the administrator the
// catalog namespace (engine.AdoptAuthorship, confirming), at random times, each a verb
// that may be killed or interrupted; once the faults stopped and every process ended,
// the owner of each namespace still holding a record stamped with an old token adopts it
// again. Mallory also runs "adopt -n dev" against alice's namespace, where she may write
// ConfigMaps but not read the vault.
//
// Checked: an adopt's write changes no spec (the bytes as stored) and re-stamps only a
// record whose spec its runner could have written (one naming the vault only by a user
// who may read it); the vault is read, or a call carries a record's author, only under
// the token of the process's view of the state, which is the current one or, for a task
// begun before the renewal, the one it replaced (vouched, checkIdentity): so after the
// renewal a record stamped with the old token gets nothing that needs its author until
// it is adopted. The verified author of every record is its spec's writer under every
// token (checkAuthors), and at quiescence every record outside t is settled, as the
// world already requires.
//
// To see the checks fail: make authority.Authority.AdoptAuthorship skip its
// checkAuthorship, and seeds 1, 8 and 14 of -sim.trust -sim.renew report mallory's adopt
// of dev re-stamping a record naming the vault as hers; make authority.Authority.of take
// an author stamped with a token since replaced for verified (its "au.Token !=
// state.Token" case), and seeds 1 and 3 report the vault read for alice's dev/vault-1
// under the old token, seed 17 a provision of dev/db-2 made for alice under it.

var renewAll = flag.Bool("sim.renew", false, "with -sim.trust: create the trust token anew (the policy removed and installed again) in every seed, not one in four")

// renewState is what the world keeps of the renewals and the adoptions.
type renewState struct {
	rng *rand.Rand
	// at are the steps at which the token is created anew.
	at []int
	// due are the namespaces whose owner has yet to adopt since the last renewal.
	due map[string]bool
	// reached counts the paths the seed reached.
	reached renewReached
}

// renewReached counts a seed's renewals, the records adopts re-stamped, and the calls
// reconcile made afterwards for a re-stamped record on its adopter's authority.
type renewReached struct {
	renewals, restamped, finished int
	// seeds counts the seeds that reached all three.
	seeds int
}

func (r *renewReached) add(o renewReached) {
	r.renewals += o.renewals
	r.restamped += o.restamped
	r.finished += o.finished
	if o.renewals > 0 && o.restamped > 0 && o.finished > 0 {
		r.seeds++
	}
}

// check fails t when the seeds never reached a renewal followed by an adopt that
// re-stamped a record and reconcile acting for it afterwards.
func (r renewReached) check(t interface{ Errorf(string, ...any) }) {
	if r.renewals == 0 || r.restamped == 0 || r.finished == 0 {
		t.Errorf("the seeds never reached a trust token created anew, then an adopt re-stamping a record, then reconcile acting for it: %+v", r)
	}
}

// newRenewState draws the seed's renewals from a source of its own, so that the seeds
// without one run as before.
func newRenewState(seed uint64) renewState {
	s := renewState{rng: rand.New(rand.NewPCG(seed^0x3c6ef372fe94f82b, seed+0xa54ff53a5f1d36f1)), due: map[string]bool{}}
	if s.rng.IntN(4) != 0 && !*renewAll {
		return s
	}
	last := max(*steps*3/4, 12)
	at := 5 + s.rng.IntN(last-5)
	s.at = []int{at}
	if s.rng.IntN(4) == 0 && at+2 < last {
		s.at = append(s.at, at+1+s.rng.IntN(last-at-1))
	}
	return s
}

// trustView is one engine's view of the trust policy's state, read through trust.Reader
// at its first use and kept for the engine's life; a reading that failed is not kept.
// The process's store stamps its token.
type trustView struct {
	w        *world
	mu       sync.Mutex
	read     bool
	state    trust.State
	token    string
	renewals int // the world's renewals when it was read
}

func (v *trustView) load(ctx context.Context) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.read {
		return nil
	}
	r := trust.NewReader(v.w.cluster.Core, storetest.CatalogNamespace)
	st, err := r.State(ctx)
	if err != nil {
		return err
	}
	tok, err := r.Token(ctx)
	if err != nil {
		return err
	}
	v.state, v.token, v.read, v.renewals = st, tok, true, v.w.trust.renewals
	return nil
}

// Token is the token the process's store stamps.
func (v *trustView) Token(ctx context.Context) (string, error) {
	if err := v.load(ctx); err != nil {
		return "", err
	}
	return v.token, nil
}

// TrustState implements engine.TrustSource, as kube.ClusterTrust does.
func (v *trustView) TrustState(ctx context.Context) (engine.TrustState, error) {
	if err := v.load(ctx); err != nil {
		return engine.TrustState{}, err
	}
	return engine.TrustState{Token: v.state.Token, Reason: v.state.Reason, MigratedFrom: v.state.MigratedFrom}, nil
}

// stale reports whether the view was read before the token was last created anew.
func (v *trustView) stale() bool {
	return v != nil && v.read && v.renewals != v.w.trust.renewals
}

// actingToken is the token p's engine verifies authors under: its view's. A view read
// before the token was created anew is the process's only while the task it read it for
// goes on; a task begun after the renewal acting under the old token is a failure.
func (p *proc) actingToken() (string, string) {
	t := p.w.trust
	v := p.view
	if v == nil || !v.read || v.state.Token == t.token {
		return t.token, ""
	}
	if v.renewals < t.startedRenewals[p] {
		return "", fmt.Sprintf("its engine verifies authors under token %q, which was replaced before its task began (the current one is %q)", v.state.Token, t.token)
	}
	return v.state.Token, ""
}

// renewStep creates the token anew when the seed drew this step.
func (w *world) renewStep() {
	if w.trust == nil || !slices.Contains(w.trust.renew.at, w.steps) {
		return
	}
	ctx := context.Background()
	core := w.cluster.Core
	if _, err := install.UninstallTrust(ctx, core, storetest.CatalogNamespace); err != nil {
		panic(err)
	}
	adm := core.AdmissionregistrationV1()
	if _, err := adm.ValidatingAdmissionPolicies().Create(ctx, trust.Policy(), metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	if _, err := adm.ValidatingAdmissionPolicyBindings().Create(ctx, trust.Binding(), metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	t := w.trust
	old := t.token
	t.renewals++
	t.token = fmt.Sprintf("token-%d-renewed-%d", w.seed, t.renewals)
	t.tokens = append(t.tokens, t.token)
	if _, err := core.CoreV1().ConfigMaps(storetest.CatalogNamespace).Create(ctx,
		trust.TokenConfigMap(storetest.CatalogNamespace, t.token), metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	t.renew.reached.renewals++
	for _, ns := range w.ownedNamespaces() {
		t.renew.due[ns] = true
	}
	w.logf("%-14s reconcile uninstall --remove-trust-policy; init: the trust policy installed again, its token created anew (%s, was %s)", "admin", t.token, old)
}

// ownedNamespaces are the namespaces whose owners adopt after a renewal.
func (w *world) ownedNamespaces() []string {
	ns := []string{"dev", "team-b", "t"}
	if w.brokersOn {
		ns = append(ns, storetest.CatalogNamespace)
	}
	return ns
}

// owner is the process of the owner of namespace ns, who adopts it: alice for every
// namespace without another.
func (w *world) owner(ns string) *proc {
	name := map[string]string{"team-b": "bob", "t": "mallory", storetest.CatalogNamespace: "admin"}[ns]
	for _, p := range w.procs {
		if p.name == name && p.kind == verbs {
			return p
		}
	}
	for _, p := range w.procs {
		if p.name == "alice" && p.kind == verbs {
			return p
		}
	}
	panic("sim: no alice")
}

// adoptTask is "adopt -n NS" by an owner whose namespace is due, now and then, or
// mallory's adopt of dev after a renewal.
func (w *world) adoptTask(p *proc) (string, func(context.Context) error, bool) {
	t := w.trust
	if t == nil || t.renewals == 0 || !w.faults || p.kind != verbs || !p.underPolicy() {
		return "", nil, false
	}
	r := t.renew.rng
	ns := p.ns
	switch {
	case p.user() == "mallory" && r.IntN(6) == 0:
		ns = "dev"
	case p.name == "admin":
		ns = storetest.CatalogNamespace
		if !t.renew.due[ns] || r.IntN(3) > 0 {
			return "", nil, false
		}
	case !t.renew.due[ns] || r.IntN(3) > 0:
		return "", nil, false
	}
	name := "adopt -n " + ns
	return name, func(ctx context.Context) error { return w.adopt(ctx, p, ns) }, true
}

// adopt is "kubectl catalog adopt -n ns" by p, answering yes to its question.
func (w *world) adopt(ctx context.Context, p *proc, ns string) error {
	res, err := p.eng.AdoptAuthorship(ctx, engine.AdoptAuthorshipRequest{Namespace: ns,
		Confirm: func([]engine.Vouch) error { return nil }})
	var outs []string
	for _, r := range res.Records {
		out := fmt.Sprintf("%s %s: %s", r.Kind, r.Name, r.Outcome)
		if r.Outcome == engine.AuthorshipRefused {
			out += " (" + r.Detail + ")"
		}
		outs = append(outs, out)
	}
	w.logf("%-14s adopt -n %s: %s", p.name, ns, strings.Join(outs, "; "))
	if err != nil {
		return err
	}
	if ns == p.ns || p.name == "admin" || p.user() == "alice" {
		delete(w.trust.renew.due, ns)
	}
	return nil
}

// checkAdoptWrite is checked as a write of an adopt lands on record key (vs its earlier
// specs, v the new one): the spec's bytes are those it had, and the runner could have
// written that spec (one naming the vault: she may read it).
func (w *world) checkAdoptWrite(key string, vs []specVersion, v *specVersion) {
	p := w.current()
	if p == nil || !strings.HasPrefix(p.task, "adopt -n ") {
		return
	}
	v.adopted = true
	if n := len(vs); n > 0 && vs[n-1].data != v.data {
		w.fail("%s's %s changed the spec of record %s:\n was %s\n now %s", p.name, p.task, key, vs[n-1].data, v.data)
	}
	if ok, why := may(v.writer, "get", "", "secrets", "dev"); v.vault && !ok {
		w.fail("%s's %s re-stamped record %s, whose spec names Secret dev/%s, as %s's own: %s", p.name, p.task, key, vaultSecret, v.writer, why)
	}
	if v.token == w.trust.token {
		w.trust.renew.reached.restamped++
	}
}

// noteAdoptedCall notes a call reconcile made on the authority of an adopter, for a
// record her adopt re-stamped.
func (w *world) noteAdoptedCall(record string, v specVersion) {
	if v.adopted && w.trust.renewals > 0 {
		w.trust.renew.reached.finished++
	}
}

// renewViewStale makes a reconcile process whose engine read the state before the token
// was created anew start again before its next run (its cache of the state ran out).
func (w *world) renewViewStale(p *proc) {
	if w.trust == nil || p.kind != reconciler || !p.view.stale() {
		return
	}
	w.logf("%-14s reads the trust state again: the token changed since its engine read it", p.name)
	p.stop()
	p.reset()
}

// adoptStranded is what the owners do once the faults stopped and every process ended:
// the owner of each namespace still holding a record stamped with an old token (doctor
// lists it) adopts it.
func (w *world) adoptStranded() {
	if w.trust == nil || w.trust.renewals == 0 {
		return
	}
	for _, ns := range w.strandedNamespaces() {
		p := w.owner(ns)
		w.begin(p, "adopt -n "+ns, func(ctx context.Context) error { return w.adopt(ctx, p, ns) })
		for p.alive && !w.stuck {
			w.run(p)
		}
	}
}

// strandedNamespaces are the namespaces holding a record with an author stamped with a
// token no longer current.
func (w *world) strandedNamespaces() []string {
	ctx := context.Background()
	var recs []v1alpha1.Record
	bs, err := w.checker.Brokers().List(ctx, "", store.Filter{})
	if err != nil {
		panic(err)
	}
	for _, b := range bs {
		recs = append(recs, b)
	}
	insts, binds := w.records()
	for _, x := range insts {
		recs = append(recs, x)
	}
	for _, x := range binds {
		recs = append(recs, x)
	}
	var out []string
	for _, r := range recs {
		au := store.AuthorOf(r)
		if au.Username != "" && au.Token != w.trust.token && slices.Contains(w.trust.tokens, au.Token) && !slices.Contains(out, r.GetNamespace()) {
			out = append(out, r.GetNamespace())
		}
	}
	slices.Sort(out)
	return out
}
