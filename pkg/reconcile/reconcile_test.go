package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sclock "k8s.io/utils/clock"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/enginetest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

const (
	ns      = storetest.UserNamespace
	brokerN = "acme"
	classID = "svc-1"
	planID  = "plan-1"
)

// fixture is a fake cluster with one broker and class, a fake broker and a reconciler.
type fixture struct {
	t       *testing.T
	cluster *storetest.Cluster
	st      *store.Store
	broker  *fake.Client
	now     time.Time
	rec     *Reconciler
	syncs   atomic.Int32
	// sync, when set, replaces the counting of catalog fetches in syncs.
	sync func(context.Context, *v1alpha1.Broker) error
	// clock is what the fake broker's calls take their time on: the run's clock.
	clock k8sclock.Clock
}

// fixtureOptions change the fixture's defaults: a fixed clock and polls every
// millisecond.
type fixtureOptions struct {
	// realClock runs the engine on the wall clock, for tests where time passes.
	realClock bool
	// virtualClock runs the engine, the store and the run itself on a virtualClock
	// (one worker): time passes, but only while the run waits.
	virtualClock bool
	// pollInterval is the engine's PollInterval and MaxPollInterval.
	pollInterval time.Duration
	// maxPollInterval, when set, is the engine's MaxPollInterval instead.
	maxPollInterval time.Duration
	// retryBase is the engine's RetryBase (its default when 0).
	retryBase time.Duration
	// events is the engine's recorder of Events (none when nil).
	events engine.EventRecorder
	// targetCache keeps brokers' records and classes between steps, as reconcile's
	// engine does (TargetCacheTTL).
	targetCache bool
}

func newFixture(t *testing.T) *fixture { return newFixtureWith(t, fixtureOptions{}) }

func newFixtureWith(t *testing.T, o fixtureOptions) *fixture {
	t.Helper()
	f := &fixture{t: t, broker: fake.New(), now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	f.cluster = storetest.NewCluster()
	clock := func() time.Time { return f.now }
	f.clock = k8sclock.RealClock{}
	var vc *virtualClock
	switch {
	case o.realClock:
		clock = time.Now
	case o.virtualClock:
		vc = newVirtualClock(f.now)
		clock, f.clock = vc.Now, vc
	}
	poll := cmp.Or(o.pollInterval, time.Millisecond)
	f.cluster.SetClock(clock)
	f.st = f.cluster.Store(store.WithClock(clock))
	eng := enginetest.New(f.st, f.broker, func(c *engine.Config) {
		c.Holder, c.Now, c.Jitter = "reconcile-test", clock, func() float64 { return 0.5 }
		c.PollInterval, c.MaxPollInterval, c.RetryBase = poll, cmp.Or(o.maxPollInterval, poll), o.retryBase
		c.Events = o.events
		if o.targetCache {
			c.TargetCacheTTL = TargetCacheTTL
		}
		c.Catalogs = catalogsync.New(f.st, nil, catalogsync.WithSync(func(ctx context.Context, b *v1alpha1.Broker) error {
			if f.sync != nil {
				return f.sync(ctx, b)
			}
			f.syncs.Add(1)
			return nil
		}))
	})
	f.rec = &Reconciler{Store: f.st, Engine: eng, Now: clock}
	if vc != nil {
		f.rec.clock = vc
	}
	ctx := context.Background()
	_, err := f.st.Brokers().Create(ctx, &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: storetest.CatalogNamespace, Name: brokerN},
		Spec:       v1alpha1.BrokerSpec{URL: "https://broker.example", Scope: v1alpha1.ScopeCluster},
	})
	assert.NilError(t, err)
	// The broker's catalog was fetched: not pending.
	_, err = f.st.Brokers().UpdateWithRetry(ctx, storetest.CatalogNamespace, brokerN, func(b *v1alpha1.Broker) error {
		b.Status.ObservedGeneration = b.Generation
		return nil
	})
	assert.NilError(t, err)
	_, err = f.st.Classes().Create(ctx, &v1alpha1.ServiceClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: storetest.CatalogNamespace, Name: v1alpha1.ClassRecordName(brokerN, classID)},
		Spec: v1alpha1.ServiceClassSpec{BrokerName: brokerN, Scope: v1alpha1.ScopeCluster, ID: classID, ExternalName: "db",
			Bindable: true, Plans: []v1alpha1.ServicePlan{{ID: planID, ExternalName: "small"}}},
	})
	assert.NilError(t, err)
	return f
}

// instance creates an instance record (pending: not provisioned yet), with an OSB id
// bound to its namespace, as provision gives one.
func (f *fixture) instance(name string) {
	f.t.Helper()
	f.instanceWithID(ns, name, v1alpha1.NewNamespaceBoundID(ns))
}

// instanceWithID creates an instance record in namespace namespace that names OSB id
// id, as one adopted with --external-id does.
func (f *fixture) instanceWithID(namespace, name, id string) {
	f.t.Helper()
	_, err := f.st.Instances().Create(context.Background(), &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: brokerN, ClassExternalName: "db",
			ClassID: classID, PlanExternalName: "small", PlanID: planID, ExternalID: id},
	})
	assert.NilError(f.t, err)
}

// provisioned creates an instance and reconciles it to Ready.
func (f *fixture) provisioned(name string) {
	f.t.Helper()
	f.instance(name)
	sum := f.run(Options{})
	assert.Equal(f.t, sum.Counts[Done], 1, "%+v", sum.Items)
	f.broker.ResetCalls()
}

func (f *fixture) run(o Options) Summary {
	f.t.Helper()
	if o.Workers == 0 {
		o.Workers = 4
	}
	sum, err := f.rec.Run(context.Background(), o)
	assert.NilError(f.t, err)
	return sum
}

func (f *fixture) item(sum Summary, name string) Item {
	f.t.Helper()
	for _, it := range sum.Items {
		if it.Name == name {
			return it
		}
	}
	f.t.Fatalf("no item %q in %+v", name, sum.Items)
	return Item{}
}

// driveCase is a record set up for a run, and what the run does with it.
type driveCase struct {
	name    string
	setup   func(f *fixture)
	opts    Options
	outcome Outcome
	calls   []string // broker methods called
	gone    bool     // the record is deleted at the end
	failed  bool
}

// claimCases are records claimed by someone else, live or not.
func claimCases(t *testing.T) []driveCase {
	return []driveCase{
		{
			name: "a live claim of someone else is skipped without reading or calling",
			setup: func(f *fixture) {
				f.instance("db")
				_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
					return store.SetClaim(i, "alice@laptop/1", time.Minute, f.now)
				})
				assert.NilError(t, err)
			},
			outcome: Skipped,
		},
		{
			name: "an expired claim is taken over",
			setup: func(f *fixture) {
				f.instance("db")
				_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
					return store.SetClaim(i, "alice@laptop/1", time.Minute, f.now)
				})
				assert.NilError(t, err)
				// Expired: seen unchanged for its duration (store.Claims), whatever its stamp.
				f.now = f.now.Add(time.Minute)
			},
			outcome: Done, calls: []string{"Provision"},
		},
		{
			name: "a live claim left by an ended process of this host is taken over",
			setup: func(f *fixture) {
				f.instance("db")
				_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
					storetest.ClaimOfEndedProcess(t, i, "kubectl-catalog@here/1", f.now.Add(time.Minute))
					return nil
				})
				assert.NilError(t, err)
			},
			outcome: Done, calls: []string{"Provision"},
		},
		{
			name: "a live claim left by an ended process over a call it may have sent is kept",
			setup: func(f *fixture) {
				f.instance("db")
				_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
					i.Status.InFlight = &v1alpha1.Operation{Type: v1alpha1.OperationProvision, InstanceID: i.Spec.ExternalID, RequestID: "r-1", StartedAt: metav1.NewTime(f.now)}
					storetest.ClaimOfEndedProcess(t, i, "kubectl-catalog@here/1", f.now.Add(time.Minute))
					return nil
				})
				assert.NilError(t, err)
			},
			outcome: Skipped,
		},
	}
}

// driveCases are records with work of each kind.
func driveCases(t *testing.T) []driveCase {
	return []driveCase{
		{
			name:    "new instance is provisioned",
			setup:   func(f *fixture) { f.instance("db") },
			outcome: Done, calls: []string{"Provision"},
		},
		{
			name: "plain delete of a provisioned instance deprovisions it",
			setup: func(f *fixture) {
				f.provisioned("db")
				assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
			},
			outcome: Done, calls: []string{"Deprovision"}, gone: true,
		},
		{
			name: "a retry not due is reported as waiting, not driven",
			setup: func(f *fixture) {
				f.instance("db")
				_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
					next := metav1.NewTime(f.now.Add(time.Hour))
					i.Status.Retry = &v1alpha1.RetryState{Attempts: 3, Reason: engine.ReasonProvisionCallFailed, LastError: "boom", NextRetryAt: &next}
					return nil
				})
				assert.NilError(t, err)
			},
			outcome: Waiting,
		},
		{
			name:    "dry run calls nothing",
			setup:   func(f *fixture) { f.instance("db") },
			opts:    Options{DryRun: true},
			outcome: WouldDrive,
		},
		{
			name: "a rejected provision fails for a person to look at",
			setup: func(f *fixture) {
				f.instance("db")
				f.broker.ProvisionReturns(nil, fake.HTTPError(http.MethodPut, http.StatusBadRequest, "", "bad parameters"))
			},
			outcome: Failed, calls: []string{"Provision"}, failed: true,
		},
		{
			name: "a broker failing is retried and left waiting",
			setup: func(f *fixture) {
				f.instance("db")
				f.broker.ProvisionReturns(nil, fake.HTTPError(http.MethodPut, http.StatusUnauthorized, "", "who are you"))
			},
			opts:    Options{MaxDuration: 500 * time.Millisecond},
			outcome: Waiting, calls: []string{"Provision"},
		},
	}
}

func TestRun_DrivesEachKindOfPendingWork(t *testing.T) {
	for _, tc := range append(driveCases(t), claimCases(t)...) {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(f)
			before, _ := f.st.Instances().Get(context.Background(), ns, "db")
			sum := f.run(tc.opts)
			it := f.item(sum, "db")
			assert.Equal(t, it.Outcome, tc.outcome, it.Detail)
			assert.Equal(t, sum.Failed(), tc.failed)
			assert.DeepEqual(t, append([]string{}, f.broker.MethodNames()...), append([]string{}, tc.calls...))
			after, err := f.st.Instances().Get(context.Background(), ns, "db")
			if tc.gone {
				assert.Assert(t, store.IsNotFound(err))
				return
			}
			assert.NilError(t, err)
			if len(tc.calls) == 0 {
				assert.Equal(t, after.ResourceVersion, before.ResourceVersion, "nothing written")
			} else if l, ok := store.LeaseOf(after); ok {
				assert.Assert(t, l.Holder != "reconcile-test", "the run released its claim")
			}
		})
	}
}

func TestRun_BrokerRelistDueIsSynced(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.st.Brokers().UpdateWithRetry(ctx, storetest.CatalogNamespace, brokerN, func(b *v1alpha1.Broker) error {
		at := metav1.NewTime(f.now.Add(-time.Second))
		b.Status.NextRelistAt = &at
		return nil
	})
	assert.NilError(t, err)
	sum := f.run(Options{DryRun: true})
	assert.Equal(t, f.item(sum, brokerN).Outcome, WouldDrive)
	assert.Equal(t, f.syncs.Load(), int32(0))
	sum = f.run(Options{})
	assert.Equal(t, f.item(sum, brokerN).Outcome, Done)
	assert.Equal(t, f.syncs.Load(), int32(1))
	b, err := f.st.Brokers().Get(ctx, storetest.CatalogNamespace, brokerN)
	assert.NilError(t, err)
	_, claimed := store.LeaseOf(b)
	assert.Assert(t, !claimed, "the broker's claim is released")
}

func TestRun_SettledRecordsAreNotListed(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db")
	sum := f.run(Options{})
	assert.Assert(t, is.Len(sum.Items, 0))
}

func TestRun_ShardsSplitWithoutOverlap(t *testing.T) {
	f := newFixture(t)
	for i := range 12 {
		f.instance(fmt.Sprintf("db-%d", i))
	}
	seen := map[string]int{}
	for i := range 3 {
		sum := f.run(Options{Shard: Shard{I: i, N: 3}, DryRun: true})
		for _, it := range sum.Items {
			seen[it.Name]++
		}
	}
	assert.Equal(t, len(seen), 12)
	for name, n := range seen {
		assert.Equal(t, n, 1, name)
	}
}

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Shard
		err  bool
	}{
		{in: "0/1", want: Shard{0, 1}},
		{in: "2/3", want: Shard{2, 3}},
		{in: "3/3", err: true},
		{in: "-1/3", err: true},
		{in: "1/0", err: true},
		{in: "1", err: true},
		{in: "a/b", err: true},
		{in: "1/3x", err: true},
	} {
		got, err := ParseShard(tc.in)
		if tc.err {
			assert.Assert(t, err != nil, tc.in)
			continue
		}
		assert.NilError(t, err, tc.in)
		assert.Equal(t, got, tc.want)
	}
}

func TestShard_CoversEveryNameOnce(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7} {
		counts := make([]int, n)
		for k := range 2000 {
			owners := 0
			for i := range n {
				if (Shard{I: i, N: n}).Owns(fmt.Sprintf("ns-%d", k%13), fmt.Sprintf("db-%d", k)) {
					owners++
					counts[i]++
				}
			}
			assert.Equal(t, owners, 1)
		}
		for i, c := range counts {
			assert.Assert(t, c > 2000/n/2, "shard %d/%d got %d of 2000: the hash spreads", i, n, c)
		}
	}
}

func TestPool(t *testing.T) {
	for _, tc := range []struct {
		name            string
		workers, n      int
		cancelAfter     int // cancel once this many started; 0: never
		wantRunAtLeast  int
		wantNotRunAbove int
	}{
		{name: "more work than workers", workers: 3, n: 20},
		{name: "more workers than work", workers: 8, n: 2},
		{name: "no work", workers: 4, n: 0},
		{name: "time up leaves the rest not run", workers: 2, n: 10, cancelAfter: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var running, peak, started atomic.Int32
			var mu sync.Mutex
			items := Pool(ctx, tc.workers, tc.n, func(i int) Item {
				r := running.Add(1)
				mu.Lock()
				peak.Store(max(peak.Load(), r))
				mu.Unlock()
				if s := started.Add(1); tc.cancelAfter > 0 && int(s) >= tc.cancelAfter {
					cancel()
				}
				time.Sleep(5 * time.Millisecond)
				running.Add(-1)
				return Item{Name: fmt.Sprint(i), Outcome: Done}
			}, func(i int) Item { return Item{Name: fmt.Sprint(i), Outcome: InProgress} })
			assert.Equal(t, len(items), tc.n)
			assert.Assert(t, int(peak.Load()) <= tc.workers, "peak %d > %d workers", peak.Load(), tc.workers)
			notRun := 0
			for i, it := range items {
				assert.Equal(t, it.Name, fmt.Sprint(i), "in order")
				if it.Outcome == InProgress {
					notRun++
				}
			}
			if tc.cancelAfter == 0 {
				assert.Equal(t, notRun, 0)
			} else {
				assert.Assert(t, notRun > 0 && int(started.Load())+notRun == tc.n, "started %d, not run %d", started.Load(), notRun)
			}
		})
	}
}

// A run over every namespace checks that no older record uses each record's OSB id on
// the list it started with, not with a list per record: on a real API server each such
// list filters every ConfigMap of the cluster, and the run's time would grow with the
// records in the cluster rather than with its work. The newest record listed is no
// exception: a copy of its id made after the list, in the same second or not, is newer.
func TestRun_AllNamespaces_ChecksOSBIDsOnItsOwnList(t *testing.T) {
	f := newFixture(t)
	for i := range 5 {
		f.instance(fmt.Sprintf("db-%d", i))
	}
	f.now = f.now.Add(time.Minute)
	f.instance("newest")
	before := f.cluster.MetadataLists()

	sum := f.run(Options{})

	assert.Equal(t, sum.Counts[Done], 6, "%+v", sum.Items)
	// The pending list alone.
	assert.Equal(t, f.cluster.MetadataLists()-before, 1)

	// In one namespace, an id bound to the namespace (as a provision generates) is
	// checked on the run's list of it too: only a record of the namespace can hold it.
	// An id bound to nothing is checked cluster-wide all the same: a list per record.
	for i := range 3 {
		f.instance(fmt.Sprintf("ns-%d", i))
	}
	for i := range 2 {
		f.instanceWithID(ns, fmt.Sprintf("adopted-%d", i), fmt.Sprintf("osb-adopted-%d", i))
	}
	f.now = f.now.Add(time.Minute)
	// The pending list's pages (their size follows the records' metadata).
	before = f.cluster.MetadataLists()
	_, err := f.st.ListPending(context.Background(), ns)
	assert.NilError(t, err)
	pages := f.cluster.MetadataLists() - before
	before = f.cluster.MetadataLists()
	sum = f.run(Options{Namespace: ns})
	assert.Equal(t, sum.Counts[Done], 5, "%+v", sum.Items)
	// The lists of every namespace of the two ids bound to nothing (the check, and
	// the claim's of the older users); none for the bound ones.
	assert.Equal(t, f.cluster.MetadataLists()-before, pages+2*2)
}

// A copy of an older record's OSB id is refused on the run's list as on a list of its
// own, and nothing is sent for it.
func TestRun_AllNamespaces_RefusesACopiedOSBID(t *testing.T) {
	f := newFixture(t)
	f.instanceWithID(ns, "db", "osb-db")
	assert.Equal(t, f.run(Options{}).Counts[Done], 1)
	f.broker.ResetCalls()
	f.now = f.now.Add(time.Minute)
	f.instanceWithID("team-b", "copy", "osb-db")
	f.now = f.now.Add(time.Minute)
	f.instance("newest")

	sum := f.run(Options{})

	assert.Equal(t, f.item(sum, "copy").Outcome, Refused, f.item(sum, "copy").Detail)
	assert.Equal(t, f.item(sum, "newest").Outcome, Done, f.item(sum, "newest").Detail)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), 1) // newest's only
	copied, err := f.st.Instances().Get(context.Background(), "team-b", "copy")
	assert.NilError(t, err)
	found := false
	for _, c := range copied.Status.Conditions {
		found = found || c.Reason == engine.ReasonRefusedIDInUse
	}
	assert.Assert(t, found, "%+v", copied.Status.Conditions)
}
