package sim

import "github.com/kubectl-catalog/kubectl-catalog/pkg/engine"

// maintainerVoucher is how the maintainer's upgrade at quiescence answers when it would
// make him the author of a record another person wrote (-sim.trust: the record names a
// Secret, another namespace or a workload). For an instance whose spec asks for a
// maintenance version its plan no longer offers (v), which waits for a person (its
// condition says so), he is that person: he vouches for a record its verified author,
// one of the cluster's own users, wrote (maintainerVouches). The upgrade of every other
// instance at the maintenance window's end asks no one and is refused for such a
// record, as before.
func maintainerVoucher(v string) engine.Voucher {
	if v == "" {
		return engine.Voucher{}
	}
	return engine.Voucher{Confirm: maintainerVouches}
}

// maintainerVouches is yes for a record its verified author, one of the cluster's own
// users, wrote, no for one mallory wrote or whose author no one can verify.
func maintainerVouches(v engine.Vouch) error {
	if v.Verified && v.Was != "" && v.Was != "mallory" {
		return nil
	}
	return engine.ErrNotConfirmed
}
