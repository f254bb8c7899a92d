package sim

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// Parameters from Secrets (-sim.paramsecret): dev's users also provision and update their
// instances with parametersFrom naming key "json" of Secret "params" in dev, and touch
// them (which reads the Secret again); a process edits that Secret between any two steps:
// a new token (a new value each time), junk that is no JSON object, or no Secret at all.
// Once the faults stop it writes a good token again.
//
// Checked as each provision and update reaches the broker: the token it carries is one the
// Secret held (never junk, never a value of anything else, under no other key), and every send of one request (its request id) carries the
// same token, whatever the Secret holds when a call is sent again. After every step: no
// ConfigMap holds a token (the values are never copied into a record, its request or
// status). At quiescence every instance is settled, or failed saying why, as elsewhere.
// (The world's processes send no Events: the engine has no recorder here.)

var paramSecret = flag.Bool("sim.paramsecret", false, "let dev's users provision and update with parametersFrom a Secret that a process keeps changing, making junk and deleting")

const (
	paramSecretName = "params"
	paramSecretKey  = "json"
	paramTokenKey   = "token"
)

// paramState is what the Secret of -sim.paramsecret held: the version of each token it
// held (from 1), the version it holds now (0: none, or junk), and the token the first send
// of each request carried.
type paramState struct {
	versions map[string]int
	now      int
	sent     map[string]string
}

func (w *world) setupParamSecret() {
	w.fromSecret = paramState{versions: map[string]int{}, sent: map[string]string{}}
	w.writeParamSecret()
}

// writeParamSecret writes a new token into the Secret (creating it when it is not there).
func (w *world) writeParamSecret() {
	v := len(w.fromSecret.versions) + 1
	token := fmt.Sprintf("ps-token-%d-%08x", v, w.rng.Uint32())
	w.fromSecret.versions[token] = v
	w.fromSecret.now = v
	// A token is a value that must never reach a ConfigMap (invariant 9).
	w.book.secrets = append(w.book.secrets, token)
	w.putParamSecret(fmt.Sprintf(`{%q:%q}`, paramTokenKey, token))
	w.logf("%-14s Secret dev/%s now holds token version %d", "secret-editor", paramSecretName, v)
}

func (w *world) putParamSecret(data string) {
	if !w.creatableIn("dev") {
		return
	}
	ctx := context.Background()
	ss := w.cluster.Core.CoreV1().Secrets("dev")
	s, err := ss.Get(ctx, paramSecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = ss.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: paramSecretName},
			Data: map[string][]byte{paramSecretKey: []byte(data)}}, metav1.CreateOptions{})
		if err != nil {
			panic(err)
		}
		return
	}
	if err != nil {
		panic(err)
	}
	if s.DeletionTimestamp != nil {
		return
	}
	s.Data = map[string][]byte{paramSecretKey: []byte(data)}
	if _, err := ss.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		panic(err)
	}
}

// secretEditorTask is the next change of the Secret.
func (w *world) secretEditorTask() (string, func(context.Context) error) {
	if !w.faults {
		if w.fromSecret.now == 0 {
			return "write a good token again", func(context.Context) error { w.writeParamSecret(); return nil }
		}
		return "nothing", func(context.Context) error { return nil }
	}
	switch n := w.rng.IntN(10); {
	case n < 5:
		return "write a new token", func(context.Context) error { w.writeParamSecret(); return nil }
	case n < 7:
		return "write junk", func(context.Context) error {
			w.fromSecret.now = 0
			w.putParamSecret("{not json")
			w.logf("%-14s Secret dev/%s now holds junk", "secret-editor", paramSecretName)
			return nil
		}
	case n < 9:
		return "delete the Secret", func(context.Context) error {
			w.fromSecret.now = 0
			err := w.cluster.Core.CoreV1().Secrets("dev").Delete(context.Background(), paramSecretName, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				panic(err)
			}
			w.logf("%-14s Secret dev/%s deleted", "secret-editor", paramSecretName)
			return nil
		}
	}
	return "nothing", func(context.Context) error { return nil }
}

// paramSecretTask is a task of a user of dev with parametersFrom, or false.
func (w *world) paramSecretTask(e *engine.Engine, ns, inst string, follow engine.Follow) (string, func(context.Context) error, bool) {
	if !*paramSecret || ns != "dev" || w.rng.IntN(3) > 0 {
		return "", nil, false
	}
	from := []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: paramSecretName, Key: paramSecretKey}}}
	plan := []string{"small", "large"}[w.rng.IntN(2)]
	switch w.rng.IntN(3) {
	case 0:
		return "provision " + inst + " --parameters-from-secret " + paramSecretName, func(ctx context.Context) error {
			_, err := e.Provision(ctx, engine.ProvisionRequest{Namespace: ns, Name: inst, Class: "db", Plan: plan, Follow: follow,
				Parameters: engine.ParametersInput{FromSecret: from}})
			return err
		}, true
	case 1:
		return "update " + inst + " --parameters-from-secret " + paramSecretName, func(ctx context.Context) error {
			_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, Follow: follow,
				UpdateRequest: engine.UpdateRequest{Parameters: &engine.ParametersInput{FromSecret: from}}})
			return err
		}, true
	}
	return "touch " + inst, func(ctx context.Context) error {
		_, err := e.Touch(ctx, engine.TouchRequest{Namespace: ns, Name: inst, Follow: follow})
		return err
	}, true
}

// checkSentParams is checked as a provision or update reaches the broker, for the
// request of id requestID carrying params.
func (w *world) checkSentParams(method, instanceID, requestID string, params json.RawMessage) {
	w.checkVaultSent(method, instanceID, requestID, params)
	if !*paramSecret {
		return
	}
	var m map[string]any
	if len(params) > 0 && json.Unmarshal(params, &m) != nil {
		return // an answer of a rogue broker's wire, or none
	}
	raw, has := m[paramTokenKey]
	token, _ := raw.(string)
	for k, v := range m {
		if s, ok := v.(string); ok && k != paramTokenKey && strings.HasPrefix(s, "ps-token-") {
			w.fail("%s of instance %s (request %s) sends the Secret's token under key %q", method, instanceID, requestID, k)
		}
	}
	if has {
		if _, ok := w.fromSecret.versions[token]; !ok {
			w.fail("%s of instance %s (request %s) sends token %v, which Secret dev/%s never held", method, instanceID, requestID, raw, paramSecretName)
		}
	}
	if requestID == "" {
		return
	}
	first, seen := w.fromSecret.sent[requestID]
	if !seen {
		w.fromSecret.sent[requestID] = token
		return
	}
	w.logf("%-14s %s of instance %s sent again (request %s): token version %d, the Secret's now %d", "broker", method, instanceID, requestID, w.fromSecret.versions[token], w.fromSecret.now)
	if first != token {
		w.fail("%s of instance %s is sent again (request %s) with token %q, and its first send carried %q: a re-send must carry what the first send did, whatever the Secret holds now",
			method, instanceID, requestID, token, first)
	}
}

// withoutSecretParams is got (what the broker holds of an instance) without the
// parameters of the Secrets, for -sim.heldplan: a changed Secret is sent at the
// instance's next update, not before (docs/engine.md, "Known limits"); and the vault's
// value of -sim.trust (trust_test.go), which only the records whose author may read the
// vault send (invariant 9 checks it as it is sent).
func (w *world) withoutSecretParams(got map[string]any) map[string]any {
	got = maps.Clone(got)
	if *paramSecret {
		delete(got, paramTokenKey)
	}
	if w.trust != nil && got["vault"] == w.trust.canary {
		delete(got, "vault")
	}
	return got
}
