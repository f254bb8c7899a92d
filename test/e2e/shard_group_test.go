package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile/shard"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
	"github.com/kubectl-catalog/kubectl-catalog/test/testio"
)

// Timing of the shard group test: a short lease and claim TTL (the claim TTL above the
// broker timeout of recEnv), so that a killed replica's share moves in seconds.
const (
	sgLease    = 3 * time.Second
	sgClaimTTL = 10 * time.Second
	sgGroup    = "sg"
	// sgFirst is how many instances the replicas provision together first.
	sgFirst = 24
	// sgMore is how many more are pending when one replica is killed.
	sgMore = 36
	// sgPostgres and sgStandard are the demo catalog's postgresql class and its
	// asynchronous "standard" plan.
	sgPostgres = "80d0a3c5-df7f-4144-a6ca-6d2be96b9701"
	sgStandard = "d3c264c8-68cf-48f7-9c49-26cb0fbff19f"
)

// sgReplica is one "reconcile --serve --shard-group" process.
type sgReplica struct {
	cmd    *exec.Cmd
	base   string
	id     string
	out    *testio.Buffer
	exited chan error
}

var sgMemberLine = regexp.MustCompile(`member (\S+) of shard group`)

func sgStart(t *testing.T, ns, catalogNS string) *sgReplica {
	t.Helper()
	r := &sgReplica{out: &testio.Buffer{}, exited: make(chan error, 1)}
	r.cmd = exec.Command(cp.Binaries.Kubectl, "catalog", "reconcile", "-n", ns, "--serve", "--shard-group", sgGroup,
		"--lease-duration", sgLease.String(), "--listen", serveListen, "--serve-interval", "5s", "--interval", "300ms", "--workers", "8")
	r.cmd.Env = append(instEnviron(t), append(recEnv,
		cmdutil.CatalogNamespaceEnv+"="+catalogNS, cmdutil.TestClaimTTLEnv+"="+sgClaimTTL.String(),
		// The test broker is done with a request once it answers: a killed replica's
		// unanswered call needs no longer grace than its claim.
		cmdutil.TestMitigationGraceEnv+"="+sgClaimTTL.String())...)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	assert.NilError(t, r.cmd.Start())
	go func() { r.exited <- r.cmd.Wait() }()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
			<-r.exited
		}
		t.Logf("replica %s:\n%s", r.id, r.out.String())
	})
	r.base = serveBase(t, r.out)
	instWaitFor(t, "the replica to join its group", 30*time.Second, func() bool {
		m := sgMemberLine.FindStringSubmatch(r.out.String())
		if m == nil {
			return false
		}
		r.id = m[1]
		return true
	})
	return r
}

// metric is the value of a metric line of the replica's /metrics ("name{labels}"),
// -1 when it cannot be read.
func (r *sgReplica) metric(line string) float64 {
	code, body := serveGet(r.base + "/metrics")
	if code != 200 {
		return -1
	}
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, line+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// sgCreate creates pending instances ns/prefix-0..n-1 on the async plan, as a user's
// provision writes them, and returns their names.
func sgCreate(t *testing.T, st *store.Store, class *v1alpha1.ServiceClass, ns, prefix string, n int) []string {
	t.Helper()
	plan := class.PlanByID(sgStandard)
	assert.Assert(t, plan != nil)
	names := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				name := fmt.Sprintf("%s-%d", prefix, i)
				names[i] = name
				_, err := st.Instances().Create(store.WithIntent(context.Background()), engine.NewInstance(ns, name, class, plan, nil, nil, ""))
				if err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NilError(t, err)
	}
	return names
}

// sgReady counts the instances of names that are Ready.
func sgReady(t *testing.T, st *store.Store, ns string, names []string) (ready int, notReady []string) {
	t.Helper()
	list, err := st.Instances().List(context.Background(), ns, store.Filter{})
	assert.NilError(t, err)
	byName := map[string]*v1alpha1.ServiceInstance{}
	for _, in := range list {
		byName[in.Name] = in
	}
	for _, n := range names {
		if in := byName[n]; in != nil && meta.IsStatusConditionTrue(in.Status.Conditions, v1alpha1.ConditionReady) {
			ready++
		} else {
			notReady = append(notReady, n)
		}
	}
	return ready, notReady
}

// TestShardGroup_ThreeReplicasSplitTheWorkAndTakeOverAKilledOnesShare runs three
// "reconcile --serve --shard-group" processes of the real binary on 24 pending
// asynchronous provisions: all finish, each replica did part of the work, and the broker
// never sees two requests at once for one instance. Then, with more work pending, one
// replica is killed (SIGKILL): the others finish its share within the documented time
// (the lease duration, plus what is left of the claims it held, plus the work itself).
// The two that are left stop on SIGTERM and delete their Leases.
func TestShardGroup_ThreeReplicasSplitTheWorkAndTakeOverAKilledOnesShare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := broker.NewTestBroker(t, broker.Options{AsyncDelay: time.Second, RetryAfter: -1})
	ns, catalogNS := cp.NewNamespace(t), cp.NewNamespace(t)
	r := instCatalog(t, ns, "register", "acme", "--url", b.URL(), "--scope", "namespace")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	st := recStore(t)
	class, err := st.Classes().Get(ctx, ns, v1alpha1.ClassRecordName("acme", sgPostgres))
	assert.NilError(t, err)
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	leases := admin.CoordinationV1().Leases(catalogNS)

	replicas := []*sgReplica{sgStart(t, ns, catalogNS), sgStart(t, ns, catalogNS), sgStart(t, ns, catalogNS)}
	instWaitFor(t, "every replica to see three members", 30*time.Second, func() bool {
		for _, rep := range replicas {
			// The gauge is set at the end of a run: an empty run comes within the interval.
			if rep.metric("kubectl_catalog_shard_members") != 3 {
				return false
			}
		}
		return true
	})

	// sgFirst pending asynchronous provisions (how the group scales is make bench's).
	start := time.Now()
	names := sgCreate(t, st, class, ns, "db", sgFirst)
	t.Logf("created %d pending instances in %s", sgFirst, time.Since(start))
	instWaitFor(t, "the first instances to be Ready", 5*time.Minute, func() bool {
		ready, _ := sgReady(t, st, ns, names)
		return ready == len(names)
	})
	t.Logf("%d instances Ready %s after the first was created", sgFirst, time.Since(start))
	// A replica counts a record in /metrics when its run ends, which can be just after
	// the record's status says Ready: wait for the counts, not only for the records.
	doneBy := func() (map[string]float64, float64) {
		by, total := map[string]float64{}, 0.0
		for _, rep := range replicas {
			by[rep.id] = rep.metric(`kubectl_catalog_reconcile_records_total{kind="ServiceInstance",outcome="done"}`)
			total += by[rep.id]
		}
		return by, total
	}
	instWaitFor(t, "the replicas' metrics to count the first instances", 60*time.Second, func() bool {
		_, total := doneBy()
		return total >= sgFirst
	})
	by, total := doneBy()
	for _, rep := range replicas {
		t.Logf("replica %s: %v instances done", rep.id, by[rep.id])
		assert.Assert(t, by[rep.id] > 0, "replica %s did none of the work", rep.id)
	}
	assert.Assert(t, total >= sgFirst, "%v done in all", total)
	assert.Equal(t, b.MaxConcurrentOverall(), 1, "two requests at once for one instance")

	// More work, slower at the broker; one replica is killed while its share is pending.
	b.SetAsyncDelay(3 * time.Second)
	victim, survivors := replicas[0], replicas[1:]
	more := sgCreate(t, st, class, ns, "more", sgMore)
	ids := []string{victim.id, survivors[0].id, survivors[1].id}
	asg := shard.NewAssignment(victim.id, ids)
	var share []string
	for _, n := range more {
		if asg.Owner(ns, n) == victim.id {
			share = append(share, n)
		}
	}
	assert.Assert(t, len(share) > 4, "the victim's share: %d", len(share))
	instWaitFor(t, "the victim to start on its share", 30*time.Second, func() bool {
		for _, n := range share {
			in, err := st.Instances().Get(ctx, ns, n)
			if err == nil && in.Status.InFlight != nil {
				return true
			}
		}
		return false
	})
	assert.NilError(t, victim.cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	<-victim.exited
	ready, pending := sgReady(t, st, ns, share)
	t.Logf("killed %s with %d of its %d records Ready", victim.id, ready, len(share))
	assert.Assert(t, len(pending) > 0, "the victim had finished its share before it was killed")

	// Documented: noticed within the lease duration, its unclaimed records taken at
	// once, those it held claimed once their claims lapse (the claim TTL at most); then
	// the work itself (3 s at the broker, and polls).
	documented := sgLease + sgClaimTTL
	within := documented + 30*time.Second
	instWaitFor(t, "the survivors to finish the victim's share", within, func() bool {
		ready, _ := sgReady(t, st, ns, more)
		return ready == len(more)
	})
	took := time.Since(killed)
	t.Logf("the victim's share was finished %s after the kill (documented: %s + the work)", took, documented)
	for _, rep := range survivors {
		assert.Equal(t, rep.metric("kubectl_catalog_shard_members"), 2.0, "replica %s", rep.id)
	}
	assert.Equal(t, b.MaxConcurrentOverall(), 1, "two requests at once for one instance")
	assert.Equal(t, len(b.Violations()), 0, "%v", b.Violations())

	// The killed replica's Lease is left to expire; the others delete theirs on SIGTERM.
	for _, rep := range survivors {
		assert.NilError(t, rep.cmd.Process.Signal(syscall.SIGTERM))
	}
	for _, rep := range survivors {
		select {
		case err := <-rep.exited:
			assert.NilError(t, err, "replica %s after SIGTERM", rep.id)
		case <-time.After(slow(30 * time.Second)):
			t.Fatalf("replica %s still running 30s after SIGTERM", rep.id)
		}
	}
	list, err := leases.List(ctx, metav1.ListOptions{LabelSelector: shard.LabelShardGroup + "=" + sgGroup})
	assert.NilError(t, err)
	var left []string
	for _, l := range list.Items {
		left = append(left, l.Name)
	}
	assert.DeepEqual(t, left, []string{shard.LeaseName(sgGroup, victim.id)})
}
