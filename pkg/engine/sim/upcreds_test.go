package sim

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/authority"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/credentials"
)

// User-provided credentials from a Secret, URL credentials and limits (-sim.upcreds,
// with -sim.upshare): dev's users also provision and update their user-provided instances
// with --credentials-from-secret (Secret up-src of dev, which they rewrite now and then
// with kubectl, and sometimes delete), with --syslog-drain-url and --route-service-url,
// and change their limits (--max-bindings, --allowed-namespaces).
//
// Checked after every step: the engine never writes the Secret a user named with
// --credentials-from-secret (its resourceVersion is the one its user left). At
// quiescence: no binding of a namespace an instance's spec no longer lets bind (not shared,
// or outside --allowed-namespaces) holds a copy of its credentials, but one of the
// instance's own namespace that it let bind since the binding was written (such a binding
// stays, and keeps getting copies of new credentials); and every binding
// settled with a copy of an instance's current credentials holds the instance's URL
// credentials (syslog_drain_url, route_service_url) as the instance's Secret does.

var upCreds = flag.Bool("sim.upcreds", false, "with -sim.upshare: let dev's users also give user-provided credentials with --credentials-from-secret and URL flags, and change the instances' limits")

const upSourceSecret = "up-src"

// upCredsTask is a task of dev's user of -sim.upcreds on user-provided instance inst, or
// false.
func (w *world) upCredsTask(e *engine.Engine, ns, inst string, follow engine.Follow) (string, func(context.Context) error, bool) {
	if !*upCreds || w.rng.IntN(2) > 0 {
		return "", nil, false
	}
	urls := func() (engine.CredentialsInput, string) {
		var c engine.CredentialsInput
		what := ""
		if w.rng.IntN(2) == 0 {
			c.SyslogDrainURL = fmt.Sprintf("syslog-tls://logs.example:%d", 6514+w.rng.IntN(3))
			what += " --syslog-drain-url " + c.SyslogDrainURL
		}
		if w.rng.IntN(3) == 0 {
			c.RouteServiceURL = fmt.Sprintf("https://route.example/%d", w.rng.IntN(3))
			what += " --route-service-url " + c.RouteServiceURL
		}
		return c, what
	}
	switch n := w.rng.IntN(10); {
	case n < 2:
		return "kubectl create/replace secret " + upSourceSecret, func(context.Context) error { w.writeUpSource(); return nil }, true
	case n < 3:
		return "kubectl delete secret " + upSourceSecret, func(context.Context) error {
			err := w.cluster.Core.CoreV1().Secrets("dev").Delete(context.Background(), upSourceSecret, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				panic(err)
			}
			return nil
		}, true
	case n < 5:
		c, what := urls()
		c.FromSecret = upSourceSecret
		return "provision " + inst + " --user-provided --credentials-from-secret " + upSourceSecret + what, func(ctx context.Context) error {
			_, err := e.ProvisionUserProvided(ctx, engine.UserProvidedRequest{Namespace: ns, Name: inst, Credentials: c, Follow: follow})
			return err
		}, true
	case n < 7:
		c, what := urls()
		if w.rng.IntN(2) == 0 {
			c.FromSecret = upSourceSecret
			what = " --credentials-from-secret " + upSourceSecret + what
		}
		if c.FromSecret == "" && c.SyslogDrainURL == "" && c.RouteServiceURL == "" {
			c.SyslogDrainURL = "syslog-tls://logs.example:6514"
			what = " --syslog-drain-url " + c.SyslogDrainURL
		}
		return "update " + inst + what, func(ctx context.Context) error {
			_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, Credentials: c, Follow: follow})
			return err
		}, true
	}
	var l engine.Limits
	what := ""
	if w.rng.IntN(2) == 0 {
		m := int32(w.rng.IntN(3))
		l.MaxBindings = &m
		what += fmt.Sprintf(" --max-bindings %d", m)
	}
	if w.rng.IntN(2) == 0 || l.MaxBindings == nil {
		allowed := [][]string{nil, {"team-b"}, {"dev"}}[w.rng.IntN(3)]
		l.AllowedNamespaces = &allowed
		what += fmt.Sprintf(" --allowed-namespaces %v", allowed)
	}
	return "update " + inst + what, func(ctx context.Context) error {
		_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, Limits: l, Follow: follow})
		return err
	}, true
}

// writeUpSource writes Secret up-src of dev as its user does with kubectl, and notes the
// resourceVersion it left.
func (w *world) writeUpSource() {
	if !w.creatableIn("dev") {
		return
	}
	ctx := context.Background()
	ss := w.cluster.Core.CoreV1().Secrets("dev")
	data := w.upCredentials()
	s, err := ss.Get(ctx, upSourceSecret, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		s, err = ss.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: upSourceSecret}, Data: data}, metav1.CreateOptions{})
	case err == nil && s.DeletionTimestamp == nil:
		s.Data = data
		s, err = ss.Update(ctx, s, metav1.UpdateOptions{})
	default:
		return
	}
	if err != nil {
		panic(err)
	}
	w.upSourceVersion = s.ResourceVersion
	w.logf("%-14s Secret dev/%s now holds %s", "kubectl", upSourceSecret, keyNames(data))
}

// checkUpSource is checked after every step: nobody but its user wrote Secret up-src.
func (w *world) checkUpSource() {
	if !*upCreds {
		return
	}
	s, err := w.cluster.Core.CoreV1().Secrets("dev").Get(context.Background(), upSourceSecret, metav1.GetOptions{})
	if err != nil || s.DeletionTimestamp != nil {
		return
	}
	if s.ResourceVersion != w.upSourceVersion {
		w.fail("Secret dev/%s, given with --credentials-from-secret, was written by the engine (resourceVersion %s, its user left %s)", upSourceSecret, s.ResourceVersion, w.upSourceVersion)
	}
}

// checkUpCopies is checked at quiescence.
func (w *world) checkUpCopies(insts []*v1alpha1.ServiceInstance, binds []*v1alpha1.ServiceBinding) {
	if !*upCreds {
		return
	}
	ctx := context.Background()
	// A binding of the instance's own namespace that holds a copy stays: its step
	// revokes none (a copy is made at once, so none of them is being bound).
	for _, r := range w.recorded {
		if r.ev.Reason == engine.ReasonRevoked && r.ev.Namespace == "dev" && strings.Contains(r.ev.Note, "instance dev/up-") {
			w.fail("%s revoked binding %s/%s of the user-provided instance's own namespace: %s", r.by, r.ev.Namespace, r.ev.Name, r.ev.Note)
			break
		}
	}
	for _, b := range binds {
		// (A binding its namespace's user wrote himself, env-old, may stay refused with
		// what he wrote: upshare_test.go.)
		if b.Status.Bound == nil || !b.Status.Bound.UserProvided || b.DeletionTimestamp != nil || b.Namespace == "t" || w.edited[b.Namespace+"/"+b.Name] {
			continue
		}
		ns, name := b.InstanceRef()
		i := slices.IndexFunc(insts, func(x *v1alpha1.ServiceInstance) bool { return x.Namespace == ns && x.Name == name })
		if i < 0 {
			continue
		}
		x := insts[i]
		if x.Spec.UserProvided == nil || x.DeletionTimestamp != nil {
			continue
		}
		// A binding of the instance's own namespace stays when its allowed namespaces
		// leave that namespace out, and keeps getting the copies, when it was let bind
		// at some time since its record was written (docs/instances.md).
		if !authority.Lets(x, b.Namespace) && (b.Namespace != x.Namespace || !w.letSince(x, b)) {
			w.fail("binding %s/%s holds a copy of the credentials of instance %s/%s, which no longer lets namespace %s bind (shared with %v, allowed %v)",
				b.Namespace, b.Name, ns, name, b.Namespace, x.Spec.SharedWith, x.Spec.AllowedNamespaces)
			continue
		}
		if _, ready := readyMessage(&b.Status.OperationStatus); !ready || !terminal(b, &b.Status.OperationStatus) {
			continue
		}
		src, err := w.checker.GetSecret(ctx, ns, x.Spec.UserProvided.CredentialsSecret)
		if err != nil || src.UID == "" || b.Status.Bound.SourceVersion != string(src.UID)+"/"+src.ResourceVersion {
			continue
		}
		dst, err := w.checker.GetSecret(ctx, b.Namespace, b.Spec.SecretName)
		if err != nil {
			continue
		}
		for _, k := range []string{credentials.KeySyslogDrainURL, credentials.KeyRouteServiceURL} {
			if string(src.Data[k]) != string(dst.Data[k]) {
				w.fail("binding %s/%s is settled with a copy of the current credentials of instance %s/%s (Secret %s, version %s), and its Secret holds %s=%q (keys %v) where the instance's holds %q (keys %v)",
					b.Namespace, b.Name, ns, name, src.Name, b.Status.Bound.SourceVersion, k, dst.Data[k], slices.Sorted(maps.Keys(dst.Data)), src.Data[k], slices.Sorted(maps.Keys(src.Data)))
			}
		}
	}
}
