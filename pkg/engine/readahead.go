package engine

import (
	"context"
	"sync"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// preparedReads keeps what PrepareInstance read (the class record and the access rules;
// bind keeps the same, update the class)
// for preparedTTL, so that the engine, checking the record a verb created from them
// moments later in the same process as the same user, need not read them again. The
// record is checked against them exactly as against records read afresh: the class is
// looked up by the namespace and name the record names, and the rules are the catalog
// namespace's. Reconcile prepares nothing, so it always reads.
type preparedReads struct {
	mu      sync.Mutex
	classes map[string]preparedClass
	rules   map[string]preparedRules
	// ids are the OSB instance ids PrepareInstance generated: a fresh UUID no older
	// record can use.
	ids map[string]bool
}

type preparedClass struct {
	class *v1alpha1.ServiceClass
	at    time.Time
}

type preparedRules struct {
	rules marketplace.Rules
	at    time.Time
}

// preparedTTL is as long as the trust state and the API server's answers about authors
// are kept (trustCacheTTL): a read that young is no staler than what the trust checks
// already accept.
const preparedTTL = trustCacheTTL

func (p *preparedReads) keep(class *v1alpha1.ServiceClass, catalogNamespace string, rules marketplace.Rules) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keepClassLocked(class)
	p.rules[catalogNamespace] = preparedRules{rules: rules, at: time.Now()}
}

// keepClass keeps the class record alone (update, which reads no access rules unless
// the plan changes, and then in its step).
func (p *preparedReads) keepClass(class *v1alpha1.ServiceClass) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keepClassLocked(class)
}

func (p *preparedReads) keepClassLocked(class *v1alpha1.ServiceClass) {
	if p.classes == nil || len(p.classes) > 100 {
		p.classes, p.rules = map[string]preparedClass{}, map[string]preparedRules{}
	}
	p.classes[class.Namespace+"/"+class.Name] = preparedClass{class: class.DeepCopy(), at: time.Now()}
}

func (p *preparedReads) class(namespace, name string) (*v1alpha1.ServiceClass, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.classes[namespace+"/"+name]
	if !ok || time.Since(c.at) > preparedTTL {
		return nil, false
	}
	return c.class.DeepCopy(), true
}

func (p *preparedReads) accessRules(catalogNamespace string) (marketplace.Rules, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.rules[catalogNamespace]
	if !ok || time.Since(r.at) > preparedTTL {
		return marketplace.Rules{}, false
	}
	return r.rules, true
}

func (p *preparedReads) generated(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ids == nil || len(p.ids) > 100 {
		p.ids = map[string]bool{}
	}
	p.ids[id] = true
}

// takeGenerated reports whether this process generated id, forgetting it: it belongs to
// the first record it is handed over with.
func (p *preparedReads) takeGenerated(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	ok := p.ids[id]
	delete(p.ids, id)
	return ok
}

// ownCreated marks the OSB id of an instance a verb has just created as its own when
// this process generated that id moments before (PrepareInstance): no record created
// before the id existed can use it, so the check that no older record does (checkID)
// needs no list. Only the engine's memory says so, never the record; an id the user gave
// is checked as ever.
func ownCreated(e *Engine, inst *v1alpha1.ServiceInstance) {
	id := inst.Spec.ExternalID
	if inst.UID == "" || inst.Status.ExternalID != "" || id == "" || !e.prepared.takeGenerated(id) {
		return
	}
	e.auth.NoteOwnID(v1alpha1.KindServiceInstance, inst, id)
}

// brokerReadAhead is a read of one broker record that a verb started right after
// creating a record, for the first step of that record's drive: the step takes it once
// (takeBrokerRead) instead of reading the broker itself, so that the read goes out
// together with the step's read of the instance. It is carried by the drive's context
// only, so no other record's step, and no later step, can take it.
type brokerReadAhead struct {
	namespace, name string
	mu              sync.Mutex
	read            *ahead.Read[*v1alpha1.Broker]
	// class, when set, is a read of the class record className of the same namespace
	// started with the broker's (withTargetReadAhead), taken once like it.
	className string
	class     *ahead.Read[*v1alpha1.ServiceClass]
}

type brokerReadAheadKey struct{}

// withBrokerReadAhead starts read of broker namespace/name and returns a context that
// carries it for the drive that follows.
func withBrokerReadAhead(ctx context.Context, namespace, name string, read func(context.Context) (*v1alpha1.Broker, error)) context.Context {
	r := &brokerReadAhead{namespace: namespace, name: name}
	r.read = ahead.Start(ctx, func() (*v1alpha1.Broker, error) { return read(ctx) })
	return context.WithValue(ctx, brokerReadAheadKey{}, r)
}

// takeBrokerRead returns the read of broker namespace/name that ctx carries, once; false
// when it carries none of that broker or it was taken already.
func takeBrokerRead(ctx context.Context, namespace, name string) (*ahead.Read[*v1alpha1.Broker], bool) {
	r, _ := ctx.Value(brokerReadAheadKey{}).(*brokerReadAhead)
	if r == nil || r.namespace != namespace || r.name != name {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	read := r.read
	r.read = nil
	return read, read != nil
}

// idListsAhead are the lists of the records labelled with an OSB id, in every
// namespace, that the check that no older record uses the id makes (checkID), started
// by a verb right after the write that marks its intent, for the ids it expects the
// drive's first step to send. Like brokerReadAhead, they are carried by the drive's
// context only and each is taken once; a check of another id lists for itself.
type idListsAhead struct {
	mu    sync.Mutex
	lists map[string]*ahead.Read[[]store.IDUser]
}

type idListsAheadKey struct{}

// idKey names an OSB id of a kind (an instance's or a binding's).
type idKey struct{ kind, id string }

// withIDListsAhead starts the lists checkID makes of ids, and returns a context that
// carries them (with those ctx carries already) for the drive that follows. A verb calls
// it right after the write that marks its intent: the lists go out after it.
func withIDListsAhead(e *Engine, ctx context.Context, ids ...idKey) context.Context {
	r := &idListsAhead{lists: map[string]*ahead.Read[[]store.IDUser]{}}
	if prev, _ := ctx.Value(idListsAheadKey{}).(*idListsAhead); prev != nil {
		prev.mu.Lock()
		for k, l := range prev.lists {
			r.lists[k] = l
		}
		prev.mu.Unlock()
	}
	for _, k := range ids {
		if k.id == "" {
			continue
		}
		r.lists[k.kind+"/"+k.id] = ahead.Start(ctx, func() ([]store.IDUser, error) {
			return e.cfg.Store.WithExternalID(ctx, k.kind, "", k.id)
		})
	}
	return context.WithValue(ctx, idListsAheadKey{}, r)
}

// takeIDList returns the list of the records of kind labelled with id that ctx carries,
// once; false when it carries none of that id or it was taken already.
func takeIDList(ctx context.Context, kind, id string) (*ahead.Read[[]store.IDUser], bool) {
	r, _ := ctx.Value(idListsAheadKey{}).(*idListsAhead)
	if r == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.lists[kind+"/"+id]
	delete(r.lists, kind+"/"+id)
	return l, l != nil
}

// withTargetReadAhead starts the reads of inst's broker and class records, and the list
// of the check of the OSB id it uses, and returns a context that carries them for the
// drive that follows (see withBrokerReadAhead and withIDListsAhead). A verb calls it
// right after the write that marks its intent: the reads go out after it.
func withTargetReadAhead(e *Engine, ctx context.Context, inst *v1alpha1.ServiceInstance) context.Context {
	ctx = withIDListsAhead(e, ctx, idKey{v1alpha1.KindServiceInstance, inst.CurrentExternalID()})
	ns, name := e.brokerNamespace(inst), v1alpha1.ClassRecordName(inst.Spec.BrokerName, inst.Spec.ClassID)
	ctx = withBrokerReadAhead(ctx, ns, inst.Spec.BrokerName, func(ctx context.Context) (*v1alpha1.Broker, error) {
		return e.cfg.Store.Brokers().Get(ctx, ns, inst.Spec.BrokerName)
	})
	r := ctx.Value(brokerReadAheadKey{}).(*brokerReadAhead)
	r.className = name
	r.class = ahead.Start(ctx, func() (*v1alpha1.ServiceClass, error) { return e.cfg.Store.Classes().Get(ctx, ns, name) })
	return ctx
}

// takeClassRead returns the read of class record namespace/name that ctx carries, once;
// false when it carries none of that class or it was taken already.
func takeClassRead(ctx context.Context, namespace, name string) (*ahead.Read[*v1alpha1.ServiceClass], bool) {
	r, _ := ctx.Value(brokerReadAheadKey{}).(*brokerReadAhead)
	if r == nil || r.namespace != namespace || r.className != name {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	read := r.class
	r.class = nil
	return read, read != nil
}

// bindingListsAhead are the lists of an instance's bindings that a deletion's step makes
// before it deprovisions (waitForBindings): in the instance's namespace and in every
// namespace. A verb starts them right after the deletion mark (and after unbinding the
// bindings it found), with the reads of the instance's broker and class; the drive's
// first step takes them (stepBindingLists), and only that step uses them.
type bindingListsAhead struct {
	namespace, name string
	mu              sync.Mutex
	own, all        *ahead.Read[listedBindings]
}

// listedBindings are the bindings a list found, and the ConfigMaps labelled as bindings
// that hold no readable record.
type listedBindings struct {
	bs  []*v1alpha1.ServiceBinding
	bad []*store.Error
}

type bindingListsAheadKey struct{}

type stepBindingListsKey struct{}

// withBindingListsAhead starts the lists of the bindings of instance namespace/name and
// returns a context that carries them for the drive that follows.
func withBindingListsAhead(e *Engine, ctx context.Context, namespace, name string) context.Context {
	list := func(ns string, f store.Filter) *ahead.Read[listedBindings] {
		return ahead.Start(ctx, func() (listedBindings, error) {
			var l listedBindings
			var err error
			l.bs, err = readableBindings(ctx, e.cfg.Store, ns, f, &l.bad)
			return l, err
		})
	}
	r := &bindingListsAhead{namespace: namespace, name: name,
		own: list(namespace, store.Filter{Instance: name}),
		all: list("", store.Filter{Instance: name, InstanceNamespace: namespace}),
	}
	return context.WithValue(ctx, bindingListsAheadKey{}, r)
}

// stepBindingLists takes, once, the lists of inst's bindings that ctx carries, and
// returns a context that carries them for this step only: a later step lists afresh.
func stepBindingLists(ctx context.Context, inst *v1alpha1.ServiceInstance) context.Context {
	r, _ := ctx.Value(bindingListsAheadKey{}).(*bindingListsAhead)
	if r == nil {
		return ctx
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.own == nil || r.namespace != inst.Namespace || r.name != inst.Name {
		return ctx
	}
	step := &bindingListsAhead{namespace: r.namespace, name: r.name, own: r.own, all: r.all}
	r.own, r.all = nil, nil
	return context.WithValue(ctx, stepBindingListsKey{}, step)
}

// takeStepBindingLists returns the lists of inst's bindings this step carries, once.
func takeStepBindingLists(ctx context.Context, inst *v1alpha1.ServiceInstance) (own, all *ahead.Read[listedBindings], ok bool) {
	r, _ := ctx.Value(stepBindingListsKey{}).(*bindingListsAhead)
	if r == nil || r.namespace != inst.Namespace || r.name != inst.Name {
		return nil, nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	own, all = r.own, r.all
	r.own, r.all = nil, nil
	return own, all, own != nil
}

// unbindReadsAhead are the reads an unbind starts right after a binding's deletion mark,
// from the binding as it read it before the mark: its instance and the Secrets its
// deletion removes. The drive's first step takes them (stepUnbindReads) and uses each
// only for the names of the binding as that step read it, after the mark; it reads any
// other name itself.
type unbindReadsAhead struct {
	namespace, name string
	mu              sync.Mutex
	inst            *boundInstanceRead
	secrets         *store.SecretReads
}

// boundInstanceRead is a read of the instance a binding names, started ahead for one
// step of the binding's drive (an unbind's, withUnbindReadsAhead; a poll's,
// bindingPollAhead). The step takes it once (take), and only for that binding and the
// instance that binding names as the step read it: any other read of the instance is
// made afresh. Like every read of the instance, it is checked (reaches) before anything
// of it is used.
type boundInstanceRead struct {
	namespace, name         string
	instNamespace, instName string
	mu                      sync.Mutex
	read                    *ahead.Read[*v1alpha1.ServiceInstance]
}

// startBoundInstanceRead starts the read of the instance b names.
func (e *Engine) startBoundInstanceRead(ctx context.Context, b *v1alpha1.ServiceBinding) *boundInstanceRead {
	r := &boundInstanceRead{namespace: b.Namespace, name: b.Name}
	r.instNamespace, r.instName = b.InstanceRef()
	r.read = ahead.Start(ctx, func() (*v1alpha1.ServiceInstance, error) {
		return e.cfg.Store.Instances().Get(ctx, r.instNamespace, r.instName)
	})
	return r
}

// take returns, once, the read of the instance b names; nil when r is nil, is of
// another binding or instance, or was taken already.
func (r *boundInstanceRead) take(b *v1alpha1.ServiceBinding) *ahead.Read[*v1alpha1.ServiceInstance] {
	if r == nil || r.namespace != b.Namespace || r.name != b.Name {
		return nil
	}
	ns, name := b.InstanceRef()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.instNamespace != ns || r.instName != name {
		return nil
	}
	read := r.read
	r.read = nil
	return read
}

type unbindReadsAheadKey struct{}

type stepUnbindReadsKey struct{}

// withUnbindReadsAhead starts the reads of b's instance (when the broker may hold b) and
// of its Secrets, and returns a context that carries them for the drive that follows.
// The unbind calls it after b's deletion mark.
func withUnbindReadsAhead(e *Engine, ctx context.Context, b *v1alpha1.ServiceBinding) context.Context {
	r := &unbindReadsAhead{namespace: b.Namespace, name: b.Name, secrets: e.cfg.Store.StartBindingSecretReads(ctx, b)}
	if len(bindingIDsAtBroker(b)) > 0 {
		r.inst = e.startBoundInstanceRead(ctx, b)
		e.auth.ReadNamespaceKeysAhead(ctx, bindingIDsAtBroker(b), b.Namespace, r.inst.instNamespace)
	}
	return context.WithValue(ctx, unbindReadsAheadKey{}, r)
}

// stepUnbindReads takes, once, the reads ctx carries for binding b, and returns a
// context that carries them for this step only: a later step reads afresh.
func stepUnbindReads(ctx context.Context, b *v1alpha1.ServiceBinding) context.Context {
	r, _ := ctx.Value(unbindReadsAheadKey{}).(*unbindReadsAhead)
	if r == nil || r.namespace != b.Namespace || r.name != b.Name {
		return ctx
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.secrets == nil {
		return ctx
	}
	step := &unbindReadsAhead{namespace: r.namespace, name: r.name, inst: r.inst, secrets: r.secrets}
	r.inst, r.secrets = nil, nil
	return context.WithValue(ctx, stepUnbindReadsKey{}, step)
}

func stepUnbindReadsOf(ctx context.Context, b *v1alpha1.ServiceBinding) *unbindReadsAhead {
	r, _ := ctx.Value(stepUnbindReadsKey{}).(*unbindReadsAhead)
	if r == nil || r.namespace != b.Namespace || r.name != b.Name {
		return nil
	}
	return r
}

// takeInstanceRead returns, once, this step's read of the instance b names; nil when
// the step carries none of that instance.
func takeInstanceRead(ctx context.Context, b *v1alpha1.ServiceBinding) *ahead.Read[*v1alpha1.ServiceInstance] {
	r := stepUnbindReadsOf(ctx, b)
	if r == nil {
		return nil
	}
	r.mu.Lock()
	inst := r.inst
	r.mu.Unlock()
	return inst.take(b)
}

// secretReads returns this step's reads of b's Secrets (nil: none).
func secretReads(ctx context.Context, b *v1alpha1.ServiceBinding) *store.SecretReads {
	r := stepUnbindReadsOf(ctx, b)
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.secrets
	r.secrets = nil
	return s
}

// secretReadAhead is a broker client factory that can start reading a broker's
// credentials Secret before the call that needs it (brokerclient.Factory): find reads
// the broker record that names it.
type secretReadAhead interface {
	ReadSecretAhead(ctx context.Context, find func() (*v1alpha1.Broker, error))
}

// brokerSecretAhead starts, for a verb, the read of broker namespace/name and, once it
// is read, of the credentials Secret it names (secretReadAhead), so that the Secret is
// at hand when the verb's call builds the broker's client: the call's own read of the
// broker, after the verb's write, is what the call rests on (and what the trust checks
// judge); this read only finds the Secret's name early, and the Secret is used only for
// a broker read then that names the same one. Nothing is read when the broker clients
// cannot read ahead.
func (e *Engine) brokerSecretAhead(ctx context.Context, namespace, name string) {
	r, ok := e.cfg.Brokers.(secretReadAhead)
	if !ok || name == "" {
		return
	}
	r.ReadSecretAhead(ctx, func() (*v1alpha1.Broker, error) {
		return e.cfg.Store.Brokers().Get(ctx, namespace, name)
	})
}

// instanceSecretAhead is brokerSecretAhead for the broker of instance namespace/name,
// read first: unbind starts it from a binding, which names only its instance.
func (e *Engine) instanceSecretAhead(ctx context.Context, namespace, name string) {
	r, ok := e.cfg.Brokers.(secretReadAhead)
	if !ok {
		return
	}
	r.ReadSecretAhead(ctx, func() (*v1alpha1.Broker, error) {
		inst, err := e.cfg.Store.Instances().Get(ctx, namespace, name)
		if err != nil || inst.IsUserProvided() {
			return nil, err
		}
		return e.cfg.Store.Brokers().Get(ctx, e.brokerNamespace(inst), inst.Spec.BrokerName)
	})
}

// The read of a binding's instance that a drive starts together with its read of the
// binding, when the binding as the last step left it has an asynchronous operation to
// poll (bindingPollAhead), is a boundInstanceRead the drive's context carries under
// pollInstanceAheadKey: the poll's step takes it (takePollInstanceRead) instead of
// reading the instance after the binding.
type pollInstanceAheadKey struct{}

// bindingPollAhead starts the read of the instance of prev, the binding as the drive's
// last step left it, when the next step is to poll its asynchronous operation (one due,
// on a binding no other driver holds), and returns a context that carries it for that
// step; else ctx.
func (e *Engine) bindingPollAhead(ctx context.Context, prev *v1alpha1.ServiceBinding) context.Context {
	op := prev.Status.InFlight
	if op == nil || !op.Async || (op.NextPollAt != nil && e.now().Before(op.NextPollAt.Time)) {
		return ctx
	}
	if l, ok := store.LeaseOf(prev); ok && l.Holder != e.cfg.Holder && e.claimLeft(prev, l) > 0 {
		return ctx
	}
	return context.WithValue(ctx, pollInstanceAheadKey{}, e.startBoundInstanceRead(ctx, prev))
}

// takePollInstanceRead returns, once, the read of the instance b names that ctx carries
// for b's poll; nil when it carries none of that binding and instance.
func takePollInstanceRead(ctx context.Context, b *v1alpha1.ServiceBinding) *ahead.Read[*v1alpha1.ServiceInstance] {
	r, _ := ctx.Value(pollInstanceAheadKey{}).(*boundInstanceRead)
	return r.take(b)
}
