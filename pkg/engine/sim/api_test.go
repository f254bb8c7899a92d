package sim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// simClient is a process's view of the API server: every request to ConfigMaps and
// Secrets is a point where the process pauses (and may be killed), and where the seed
// may make the request fail (a conflict, 413, 422, 500, a timeout, a refusal).
type simClient struct {
	kubernetes.Interface
	p *proc
}

func (c simClient) CoreV1() corev1client.CoreV1Interface {
	return simCoreV1{CoreV1Interface: c.Interface.CoreV1(), p: c.p}
}

type simCoreV1 struct {
	corev1client.CoreV1Interface
	p *proc
}

func (c simCoreV1) ConfigMaps(ns string) corev1client.ConfigMapInterface {
	return simConfigMaps{ConfigMapInterface: c.CoreV1Interface.ConfigMaps(ns), p: c.p, ns: ns}
}

func (c simCoreV1) Secrets(ns string) corev1client.SecretInterface {
	return simSecrets{SecretInterface: c.CoreV1Interface.Secrets(ns), p: c.p, ns: ns}
}

var (
	configMaps = schema.GroupResource{Resource: "configmaps"}
	secrets    = schema.GroupResource{Resource: "secrets"}
)

// request pauses the process before a request in namespace ns and says how it fails, if
// it does.
func (p *proc) request(ctx context.Context, verb string, gr schema.GroupResource, ns, name string) error {
	if p.dead {
		return errKilled
	}
	w := p.w
	write := verb == "create" || verb == "update" || verb == "delete"
	if err := p.rbac(verb, gr, ns, name); err != nil {
		p.apiFaults++
		return err
	}
	if err := w.refuseInTerminating(verb, gr, ns, name); err != nil {
		p.apiFaults++
		return err
	}
	if write {
		// Reads do not pause: what others write meanwhile is seen the same way, and
		// every record is stepped more often per step of the simulation.
		p.pause("api " + verb + " " + gr.Resource + " " + ns + "/" + name)
		if p.dead {
			return errKilled
		}
		w.wrote = true
		if gr == configMaps {
			w.written[ns+"/"+name] = true
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !w.faults || !w.chance(w.rates.apiFault) {
		return nil
	}
	var err error
	switch n := w.rng.IntN(6); {
	case n == 0 && write && verb != "create":
		err = apierrors.NewConflict(gr, name, errors.New("sim: the object has been modified"))
	case n == 1 && verb == "update":
		err = apierrors.NewRequestEntityTooLargeError("sim: request is too large")
	case n == 2 && write:
		err = apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, name, nil)
	case n == 3:
		err = apierrors.NewForbidden(gr, name, errors.New("sim: admission refused the request"))
	case n == 4:
		err = apierrors.NewTimeoutError("sim: the request timed out", 1)
	default:
		err = apierrors.NewInternalError(errors.New("sim: etcd is unavailable"))
	}
	w.logf("%-14s api fault: %v", p.name, err)
	p.apiFaults++
	return err
}

// rbac refuses what a user limited to some namespaces may not do: list or write outside
// them (reading one record of another namespace, a shared instance say, is allowed, as
// the viewer role there allows it; so is listing the catalog).
func (p *proc) rbac(verb string, gr schema.GroupResource, ns, name string) error {
	if *trustPolicy {
		return p.trustRBAC(verb, gr, ns, name)
	}
	if p.sees == nil || ns == storetest.CatalogNamespace && verb == "list" || verb == "get" || slices.Contains(p.sees, ns) {
		return nil
	}
	return apierrors.NewForbidden(gr, name, fmt.Errorf("sim: user %s may not %s %s in namespace %q", p.name, verb, gr.Resource, ns))
}

var lostAnswers = flag.Bool("sim.lostanswer", false, "let API writes land while their answer is lost (the writer gets a timeout or a 500)")

// landed is what the writer of a write that reached the API server gets: its answer,
// or with -sim.lostanswer now and then a timeout or a 500 although the write landed.
func landed[T any](p *proc, out T, err error, verb string, gr schema.GroupResource, ns, name string) (T, error) {
	w := p.w
	if err != nil || !*lostAnswers || !w.faults || !w.chance(w.rates.apiFault) {
		return out, err
	}
	var none T
	err = apierrors.NewTimeoutError("sim: the answer was lost", 1)
	if w.rng.IntN(2) == 0 {
		err = apierrors.NewInternalError(errors.New("sim: the connection broke before the answer"))
	}
	w.logf("%-14s api %s %s %s/%s landed, its answer lost: %v", p.name, verb, gr.Resource, ns, name, err)
	p.apiFaults++
	return none, err
}

type simConfigMaps struct {
	corev1client.ConfigMapInterface
	p  *proc
	ns string
}

func (c simConfigMaps) Get(ctx context.Context, name string, o metav1.GetOptions) (*corev1.ConfigMap, error) {
	if err := c.p.request(ctx, "get", configMaps, c.ns, name); err != nil {
		return nil, err
	}
	return c.ConfigMapInterface.Get(ctx, name, o)
}

func (c simConfigMaps) List(ctx context.Context, o metav1.ListOptions) (*corev1.ConfigMapList, error) {
	if err := c.p.request(ctx, "list", configMaps, c.ns, o.LabelSelector); err != nil {
		return nil, err
	}
	return c.ConfigMapInterface.List(ctx, o)
}

func (c simConfigMaps) Create(ctx context.Context, cm *corev1.ConfigMap, o metav1.CreateOptions) (*corev1.ConfigMap, error) {
	if err := c.p.request(ctx, "create", configMaps, c.ns, cm.Name); err != nil {
		return nil, err
	}
	if err := c.p.admit("CREATE", cm, nil); err != nil {
		return nil, err
	}
	out, err := c.ConfigMapInterface.Create(ctx, cm, o)
	if err == nil && out != nil && c.p.underPolicy() {
		c.p.w.noteWrite(c.ns, out.Name, c.p.user())
	}
	return landed(c.p, out, err, "create", configMaps, c.ns, cm.Name)
}

func (c simConfigMaps) Update(ctx context.Context, cm *corev1.ConfigMap, o metav1.UpdateOptions) (*corev1.ConfigMap, error) {
	if err := c.p.request(ctx, "update", configMaps, c.ns, cm.Name); err != nil {
		return nil, err
	}
	old, err := c.ConfigMapInterface.Get(ctx, cm.Name, metav1.GetOptions{})
	if err == nil {
		if err := c.p.admit("UPDATE", cm, old); err != nil {
			return nil, err
		}
	}
	out, err := c.ConfigMapInterface.Update(ctx, cm, o)
	if err == nil && old != nil {
		c.p.noteTakeOver(old, cm) // takeover_test.go
	}
	if err == nil && c.p.underPolicy() {
		c.p.w.noteWrite(c.ns, cm.Name, c.p.user())
	}
	return landed(c.p, out, err, "update", configMaps, c.ns, cm.Name)
}

func (c simConfigMaps) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	if err := c.p.request(ctx, "delete", configMaps, c.ns, name); err != nil {
		return err
	}
	_, err := landed[*corev1.ConfigMap](c.p, nil, c.ConfigMapInterface.Delete(ctx, name, o), "delete", configMaps, c.ns, name)
	return err
}

type simSecrets struct {
	corev1client.SecretInterface
	p  *proc
	ns string
}

func (c simSecrets) Get(ctx context.Context, name string, o metav1.GetOptions) (*corev1.Secret, error) {
	if err := c.p.request(ctx, "get", secrets, c.ns, name); err != nil {
		return nil, err
	}
	c.p.w.checkSecretRead(c.p, c.ns, name)
	return c.SecretInterface.Get(ctx, name, o)
}

func (c simSecrets) List(ctx context.Context, o metav1.ListOptions) (*corev1.SecretList, error) {
	if err := c.p.request(ctx, "list", secrets, c.ns, o.LabelSelector); err != nil {
		return nil, err
	}
	return c.SecretInterface.List(ctx, o)
}

func (c simSecrets) Create(ctx context.Context, s *corev1.Secret, o metav1.CreateOptions) (*corev1.Secret, error) {
	if err := c.p.request(ctx, "create", secrets, c.ns, s.Name); err != nil {
		return nil, err
	}
	c.p.w.checkVaultCopied(c.p, s)
	out, err := c.SecretInterface.Create(ctx, s, o)
	return landed(c.p, out, err, "create", secrets, c.ns, s.Name)
}

func (c simSecrets) Update(ctx context.Context, s *corev1.Secret, o metav1.UpdateOptions) (*corev1.Secret, error) {
	if err := c.p.request(ctx, "update", secrets, c.ns, s.Name); err != nil {
		return nil, err
	}
	out, err := c.SecretInterface.Update(ctx, s, o)
	return landed(c.p, out, err, "update", secrets, c.ns, s.Name)
}

func (c simSecrets) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	if err := c.p.request(ctx, "delete", secrets, c.ns, name); err != nil {
		return err
	}
	err := c.SecretInterface.Delete(ctx, name, o)
	c.p.w.noteSecretDeleted(c.p, c.ns, name, err) // abandon_secret_test.go
	_, err = landed[*corev1.Secret](c.p, nil, err, "delete", secrets, c.ns, name)
	return err
}
