package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// This file keeps what a provision, update or bind sent, so that the re-send of an
// interrupted call is the identical request whoever makes it and whatever changed
// meanwhile: OSB answers an identical PUT with 200/201/202, and a different one with a
// 409 or, worse, applies it. Kept at the write-ahead, in status.inFlight.sent: the
// platform values (cluster id, namespace uid) and the parameters from the spec; the
// parameters whose values came from Secrets go to a Secret owned by the record's
// ConfigMap instead, written before the write-ahead and deleted once the call's outcome
// is stored (the garbage collector deletes it with the record otherwise).

// keepRequest records in op.Sent what the call is about to send: sent, and params when
// the request carries parameters (nil when it carries none). The parameters from Secrets
// are written to a Secret owned by rec now, before the write-ahead, so that a re-send
// after a crash finds them.
func keepRequest(e *Engine, ctx context.Context, rec v1alpha1.Record, op *v1alpha1.Operation, sent v1alpha1.SentRequest, params *Parameters) error {
	op.Sent = &sent
	if params == nil {
		return nil
	}
	inline := params.only(func(k string) bool { return !params.FromSecret[k] })
	op.Sent.Parameters = string(inline.body())
	fromSecrets := params.only(func(k string) bool { return params.FromSecret[k] })
	if len(fromSecrets.All) == 0 {
		return nil
	}
	op.Sent.ParametersSecret = store.RequestSecretName(op.RequestID)
	err := e.cfg.Store.WriteRequestSecret(ctx, rec, op.Sent.ParametersSecret, map[string][]byte{store.RequestParametersKey: fromSecrets.JSON()})
	if err != nil {
		return fmt.Errorf("cannot keep the parameters from Secrets for a re-send of the call: %w", err)
	}
	return nil
}

// sentLostError says a kept request cannot be read back: the Secret that kept its
// parameters from Secrets is gone, is not the record's, or does not hold them. The call
// cannot be re-sent as it was.
type sentLostError struct{ msg string }

func (e *sentLostError) Error() string { return e.msg }

func isSentLost(err error) bool {
	var l *sentLostError
	return errors.As(err, &l)
}

// sentParameters reads back the parameters a call sent (nil when it sent none): those of
// the spec from sent, those from Secrets from the Secret rec owns, never from the Secrets
// the spec names, which may have changed since.
func sentParameters(e *Engine, ctx context.Context, rec v1alpha1.Record, sent *v1alpha1.SentRequest) (*Parameters, error) {
	if sent.Parameters == "" {
		return nil, nil
	}
	p := Parameters{All: map[string]json.RawMessage{}, FromSecret: map[string]bool{}}
	if err := json.Unmarshal([]byte(sent.Parameters), &p.All); err != nil || p.All == nil {
		return nil, &sentLostError{msg: "the parameters kept in status.inFlight.sent are not a JSON object, so the interrupted call cannot be re-sent as it was"}
	}
	if sent.ParametersSecret == "" {
		return &p, nil
	}
	data, err := e.cfg.Store.ReadRequestSecret(ctx, rec, sent.ParametersSecret)
	if store.IsNotFound(err) || store.IsNotOwned(err) {
		return nil, &sentLostError{msg: fmt.Sprintf("Secret %q, which kept the parameters from Secrets the interrupted call sent, is gone or not the record's, so the call cannot be re-sent as it was", sent.ParametersSecret)}
	}
	if err != nil {
		return nil, err
	}
	var fromSecrets map[string]json.RawMessage
	if err := json.Unmarshal(data[store.RequestParametersKey], &fromSecrets); err != nil || fromSecrets == nil {
		return nil, &sentLostError{msg: fmt.Sprintf("Secret %q does not hold the parameters the interrupted call sent, so the call cannot be re-sent as it was", sent.ParametersSecret)}
	}
	for k, v := range fromSecrets {
		p.All[k], p.FromSecret[k] = v, true
	}
	return &p, nil
}

// sentContext is the Kubernetes context and the deprecated GUIDs of a re-send. They come
// from what the platform knows, not from status.inFlight.sent, which the record's author
// may write: brokers that scope tenants by space_guid or organization_guid are not to be
// told another namespace's or cluster's. The cluster id is the platform's. The space GUID
// is the namespace's uid; the kept one is sent instead only when it is the namespace's
// name, which the first send carried when its user could not read the namespace, so
// that the re-send stays the identical request.
func sentContext(e *Engine, ctx context.Context, inst *v1alpha1.ServiceInstance, sent *v1alpha1.SentRequest) (*osb.KubernetesContext, string, string, error) {
	kctx, cluster, space, err := e.osbContext(ctx, inst)
	if err != nil {
		return nil, "", "", err
	}
	if sent.NamespaceUID == inst.Namespace {
		space = sent.NamespaceUID
	}
	return kctx, cluster, space, nil
}

// dropSent deletes the Secret that kept the parameters op sent once stored no longer has
// op to re-send: its outcome is stored, or another call replaced it. Best effort: the
// garbage collector deletes the Secret with the record otherwise. An async operation's
// Secret went when its 202 was stored.
func dropSent[T driven[T]](e *Engine, ctx context.Context, op *v1alpha1.Operation, stored T) {
	if op == nil || op.Async || op.Sent == nil || op.Sent.ParametersSecret == "" {
		return
	}
	if cur := stored.OpStatus().InFlight; cur != nil && cur.RequestID == op.RequestID && !cur.Async {
		return
	}
	_ = e.cfg.Store.DeleteRequestSecret(ctx, stored, op.Sent.ParametersSecret)
}
