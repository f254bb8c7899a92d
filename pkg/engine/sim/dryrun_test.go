package sim

import (
	"context"
	"flag"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/enginetest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Dry runs (-sim.dryrun): an administrator runs the verbs with --dry-run=client and
// --dry-run=server on the records the other processes drive (provision, provision
// --user-provided, update of the plan and of the parameters, touch, deprovision, bind,
// unbind, share, unshare), at any step: between and during the other processes' writes
// and calls. Checked as it happens: a dry run sends no request to any broker, and writes
// nothing (a write it makes to a ConfigMap or a Secret is a server-side dry run, or it
// fails the seed), whatever state the records are in.

var dryRuns = flag.Bool("sim.dryrun", false, "let an administrator run the verbs with --dry-run=client and --dry-run=server at any step")

// addDryRunProc adds the process of -sim.dryrun to a world.
func (w *world) addDryRunProc() {
	if *dryRuns {
		w.procs = append(w.procs, w.newProc("dry-run", modelProc, "dev"))
	}
}

// dryRunTask is a verb run as a dry run, by an engine whose broker answers nothing and
// whose API client fails the seed at any write that is not a dry run.
func (w *world) dryRunTask(p *proc) (string, func(context.Context) error) {
	mode := []engine.DryRun{engine.DryRunClient, engine.DryRunServer}[w.rng.IntN(2)]
	ns := []string{"dev", "dev", "dev", "team-b"}[w.rng.IntN(4)]
	inst := instanceNames[w.rng.IntN(len(instanceNames))]
	bind := bindingNames[w.rng.IntN(len(bindingNames))]
	plan := []string{"small", "large"}[w.rng.IntN(2)]
	broker := fake.New()
	// The administrator is who the other processes are: under the trust policy, her
	// store stamps her user and groups and the policy's token, and her engine checks the
	// policy's state and her rights, as a command's does (the broker answers nothing).
	tr := p.trustReader()
	st := store.New(dryRunClient{simClient: simClient{Interface: w.cluster.Core, p: p}}, w.cluster.Metadata,
		append([]store.Option{store.WithClock(p.now), store.WithIdentity(p.identity)}, p.trustStore(tr)...)...)
	e := enginetest.New(st, broker, func(c *engine.Config) {
		c.Holder = p.holderName()
		c.Platform = engine.StaticPlatform{Cluster: enginetest.Cluster, User: &osb.OriginatingIdentity{Username: p.user(), UID: "u-" + p.user()}}
		if tr != nil {
			c.Trust = tr
			c.Authorizer = simAuthorizer{p}
		}
		c.Now, c.Jitter, c.Sleep, c.IDs, c.ClaimTTL = p.now, w.rng.Float64, p.sleep, w.rngReader(), w.claimTTL
		if workloadsOn() {
			c.Projector = p.dryRunProjector(w.cluster) // workloads_test.go
		}
	})
	var name string
	var verb func(ctx context.Context) error
	switch w.rng.IntN(10) {
	case 0:
		name = "provision " + inst
		verb = func(ctx context.Context) error {
			_, err := e.Provision(ctx, engine.ProvisionRequest{Namespace: ns, Name: inst, Class: "db", Plan: plan, DryRun: mode})
			return err
		}
	case 1:
		name = "provision " + upInstanceNames[0] + " --user-provided"
		verb = func(ctx context.Context) error {
			_, err := e.ProvisionUserProvided(ctx, engine.UserProvidedRequest{Namespace: ns, Name: upInstanceNames[0], DryRun: mode,
				Credentials: engine.CredentialsInput{Read: func() (map[string][]byte, error) { return map[string][]byte{"user": []byte("u")}, nil }}})
			return err
		}
	case 2:
		name = "update " + inst + " to " + plan
		verb = func(ctx context.Context) error {
			_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, UpdateRequest: engine.UpdateRequest{Plan: plan}, DryRun: mode})
			return err
		}
	case 3:
		name = "update " + inst + " parameters"
		verb = func(ctx context.Context) error {
			params := &engine.ParametersInput{Pairs: []string{fmt.Sprintf("size=%d", w.rng.IntN(3))}}
			_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, UpdateRequest: engine.UpdateRequest{Parameters: params}, DryRun: mode})
			return err
		}
	case 4:
		name = "touch " + inst
		verb = func(ctx context.Context) error {
			_, err := e.Touch(ctx, engine.TouchRequest{Namespace: ns, Name: inst, DryRun: mode})
			return err
		}
	case 5:
		name = "deprovision " + inst
		verb = func(ctx context.Context) error {
			_, err := e.Deprovision(ctx, engine.DeprovisionRequest{Namespace: ns, Name: inst, DryRun: mode})
			return err
		}
	case 6:
		name = "bind " + bind + " to " + inst
		verb = func(ctx context.Context) error {
			req := engine.BindRequest{Namespace: ns, Instance: inst, Name: bind, DryRun: mode}
			if ns == "team-b" {
				req.InstanceNamespace = "dev"
			}
			_, err := e.Bind(ctx, req)
			return err
		}
	case 7:
		name = "unbind " + bind
		verb = func(ctx context.Context) error {
			_, err := e.Unbind(ctx, engine.UnbindRequest{Namespace: ns, Bindings: []string{bind}, DryRun: mode})
			return err
		}
	case 8:
		name = "share " + inst + " with team-b"
		verb = func(ctx context.Context) error {
			_, err := e.Share(ctx, engine.ShareRequest{Namespace: "dev", Name: inst, To: "team-b", DryRun: mode})
			return err
		}
	default:
		name = "unshare " + inst + " from team-b"
		verb = func(ctx context.Context) error {
			_, err := e.Unshare(ctx, engine.UnshareRequest{Namespace: "dev", Name: inst, From: "team-b", DryRun: mode})
			return err
		}
	}
	return fmt.Sprintf("%s -n %s --dry-run=%s", name, ns, mode), func(ctx context.Context) error {
		p.record = ns + "/" + inst
		err := verb(ctx)
		if calls := broker.Calls(); len(calls) > 0 {
			w.fail("a dry run (%s) called the broker: %s", p.task, calls[0].Method)
		}
		return err
	}
}

// dryRunClient is the API client of a dry run: a write that is not a server-side dry
// run fails the seed.
type dryRunClient struct{ simClient }

func (c dryRunClient) CoreV1() corev1client.CoreV1Interface {
	return dryRunCoreV1{CoreV1Interface: c.simClient.CoreV1(), p: c.p}
}

type dryRunCoreV1 struct {
	corev1client.CoreV1Interface
	p *proc
}

func (c dryRunCoreV1) ConfigMaps(ns string) corev1client.ConfigMapInterface {
	return dryRunConfigMaps{ConfigMapInterface: c.CoreV1Interface.ConfigMaps(ns), p: c.p, ns: ns}
}

func (c dryRunCoreV1) Secrets(ns string) corev1client.SecretInterface {
	return dryRunSecrets{SecretInterface: c.CoreV1Interface.Secrets(ns), p: c.p, ns: ns}
}

// wrote fails the seed for a write that is not a dry run.
func (p *proc) wroteInDryRun(verb, resource, ns, name string, dryRun []string) {
	if len(dryRun) == 0 {
		p.w.fail("a dry run (%s) wrote: %s %s %s/%s", p.task, verb, resource, ns, name)
	}
}

type dryRunConfigMaps struct {
	corev1client.ConfigMapInterface
	p  *proc
	ns string
}

func (c dryRunConfigMaps) Create(ctx context.Context, cm *corev1.ConfigMap, o metav1.CreateOptions) (*corev1.ConfigMap, error) {
	c.p.wroteInDryRun("create", "configmaps", c.ns, cm.Name, o.DryRun)
	return c.ConfigMapInterface.Create(ctx, cm, o)
}

func (c dryRunConfigMaps) Update(ctx context.Context, cm *corev1.ConfigMap, o metav1.UpdateOptions) (*corev1.ConfigMap, error) {
	c.p.wroteInDryRun("update", "configmaps", c.ns, cm.Name, o.DryRun)
	return c.ConfigMapInterface.Update(ctx, cm, o)
}

func (c dryRunConfigMaps) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	c.p.wroteInDryRun("delete", "configmaps", c.ns, name, o.DryRun)
	return c.ConfigMapInterface.Delete(ctx, name, o)
}

func (c dryRunConfigMaps) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*corev1.ConfigMap, error) {
	c.p.wroteInDryRun("patch", "configmaps", c.ns, name, o.DryRun)
	return c.ConfigMapInterface.Patch(ctx, name, pt, data, o, sub...)
}

type dryRunSecrets struct {
	corev1client.SecretInterface
	p  *proc
	ns string
}

func (c dryRunSecrets) Create(ctx context.Context, s *corev1.Secret, o metav1.CreateOptions) (*corev1.Secret, error) {
	c.p.wroteInDryRun("create", "secrets", c.ns, s.Name, o.DryRun)
	return c.SecretInterface.Create(ctx, s, o)
}

func (c dryRunSecrets) Update(ctx context.Context, s *corev1.Secret, o metav1.UpdateOptions) (*corev1.Secret, error) {
	c.p.wroteInDryRun("update", "secrets", c.ns, s.Name, o.DryRun)
	return c.SecretInterface.Update(ctx, s, o)
}

func (c dryRunSecrets) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	c.p.wroteInDryRun("delete", "secrets", c.ns, name, o.DryRun)
	return c.SecretInterface.Delete(ctx, name, o)
}

func (c dryRunSecrets) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*corev1.Secret, error) {
	c.p.wroteInDryRun("patch", "secrets", c.ns, name, o.DryRun)
	return c.SecretInterface.Patch(ctx, name, pt, data, o, sub...)
}
