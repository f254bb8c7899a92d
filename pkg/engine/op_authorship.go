package engine

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/authority"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Vouch is what a person vouches for by writing, as her own, a record another person
// wrote (authority.Vouch): "sync broker" and "adopt" show it and ask first.
type Vouch = authority.Vouch

// ErrNotConfirmed is the error of a command that would make its runner vouch for a
// record another person wrote, and was not confirmed: nothing was changed.
var ErrNotConfirmed = authority.ErrNotConfirmed

// AdoptAuthorshipRequest asks to re-stamp the records of a namespace whose author cannot
// be verified (written before the trust policy now in force) as the runner's own.
type AdoptAuthorshipRequest struct {
	Namespace string
	DryRun    DryRun
	// Confirm is given what adopting the records means, before anything is written; an
	// error from it writes nothing and is returned. Nil: nothing is adopted
	// (ErrNotConfirmed). A dry run does not ask.
	Confirm func([]Vouch) error
}

// AdoptAuthorship re-stamps, as the runner's own, the records of a namespace whose
// author cannot be verified, each checked against the runner's rights as a verb writing
// its spec would be (authority.Authority.AdoptAuthorship), once the runner confirmed what
// that vouches for; with a dry run it writes nothing (client) or sends the writes as dry
// runs (server).
func (e *Engine) AdoptAuthorship(ctx context.Context, req AdoptAuthorshipRequest) (AdoptAuthorshipResult, error) {
	return e.auth.AdoptAuthorship(ctx, req.Namespace, req.DryRun == DryRunClient, req.DryRun == DryRunServer, req.DryRun.writes, req.Confirm)
}

// Voucher is how a verb that writes a record as its runner's intent (update, touch,
// share, unshare, bind --rotate) asks her first when the record is another person's and
// names what her authority then reaches (Vouch.Reaches): the write would make her its
// author, and the engine would act for what that person wrote on her authority.
type Voucher struct {
	// Confirm is given what the write vouches for, before anything is written; an error
	// from it changes nothing and is returned. Nil: such a record is not written
	// (ErrNotConfirmed).
	Confirm func(Vouch) error
	// Shown is given, on a dry run, what the write would vouch for. Nil drops it.
	Shown func(Vouch)
}

// shownSpec is the spec a verb checked (and, where it vouches for it, showed) before
// writing its record: the write is made only on that spec.
type shownSpec struct {
	kind, name string
	uid        types.UID
	hash       string
}

// still refuses cur when its spec is no longer the one shown: someone wrote the record
// again since it was read.
func (s shownSpec) still(cur v1alpha1.Record) error {
	h, err := store.SpecHash(cur)
	if err != nil {
		return err
	}
	if h != s.hash || cur.GetUID() != s.uid {
		return fmt.Errorf("%s %q changed since it was read (someone wrote its record again): nothing was changed; run the command again to see it as it is now", s.kind, s.name)
	}
	return nil
}

// vouchBeforeWrite checks rec, as just read, before a verb writes it as its runner's
// intent. When the runner would vouch for what another person, verified by the trust
// policy, wrote and it names what her authority then reaches (authority.VouchingOver),
// it asks v.Confirm (v.Shown on a dry run); a record she could not have written herself
// (a Secret she may not read) is refused. The verb then writes only on the returned
// spec.
func (e *Engine) vouchBeforeWrite(ctx context.Context, rec v1alpha1.Record, kind string, dry DryRun, v Voucher) (shownSpec, error) {
	shown := shownSpec{kind: kind, name: rec.GetName(), uid: rec.GetUID()}
	var err error
	if shown.hash, err = store.SpecHash(rec); err != nil {
		return shown, err
	}
	vouch, err := e.auth.VouchingOver(ctx, rec)
	if err != nil {
		return shown, fmt.Errorf("%s %q in namespace %q is left as it is: writing it would make you the author of what %s: %w",
			kind, rec.GetName(), rec.GetNamespace(), writtenBy(rec), err)
	}
	if vouch == nil || !vouch.Reaches {
		return shown, nil
	}
	if dry.Enabled() {
		if v.Shown != nil {
			v.Shown(*vouch)
		}
		return shown, nil
	}
	if v.Confirm == nil {
		return shown, fmt.Errorf("%s %q in namespace %q: %w", kind, rec.GetName(), rec.GetNamespace(), ErrNotConfirmed)
	}
	return shown, v.Confirm(*vouch)
}

// writtenBy names who wrote rec, as its record says, for a refusal.
func writtenBy(rec v1alpha1.Record) string {
	if au := store.AuthorOf(rec).Username; au != "" {
		return fmt.Sprintf("%q wrote", au)
	}
	return "someone wrote"
}
