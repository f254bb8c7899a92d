package engine

import (
	"context"
	"sync"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
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
func (e *Engine) ownCreated(inst *v1alpha1.ServiceInstance) {
	id := inst.Spec.ExternalID
	if inst.UID == "" || inst.Status.ExternalID != "" || id == "" || !e.prepared.takeGenerated(id) {
		return
	}
	c := &e.trust
	c.mu.Lock()
	if c.owned == nil || len(c.owned) > 100000 {
		c.owned = map[string]string{}
	}
	c.owned[v1alpha1.KindServiceInstance+"/"+id] = string(inst.UID)
	c.mu.Unlock()
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

// withTargetReadAhead starts the reads of inst's broker and class records, and returns a
// context that carries them for the drive that follows (see withBrokerReadAhead). A verb
// calls it right after the write that marks its intent: both reads go out after it.
func (e *Engine) withTargetReadAhead(ctx context.Context, inst *v1alpha1.ServiceInstance) context.Context {
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
