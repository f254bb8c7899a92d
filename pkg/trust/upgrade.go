package trust

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// priorStamped are the "stamped" expressions of earlier releases' policies that differ
// from this one's in that variable only, and vouched for every author the same way: a
// record they admitted was written by the user its author annotation names. The first
// compared the groups joined with "," only, which cannot keep a group holding a ","
// apart from two groups; records it admitted keep that form, read as before.
var priorStamped = []string{
	"variables.author == request.userInfo.username" +
		" && variables.groups == request.userInfo.?groups.orValue([]).join(',')",
}

// UpgradedInPlace reports whether before, the trust policy as the API server held it
// before this release applied Policy(), is an earlier release's that vouched for every
// author the same way: Policy() but for the "stamped" variable, which was one of an
// earlier release's (priorStamped), or the earlier release's policy (PriorPolicy: no
// check of who sets the migrated-from annotation), with either form of "stamped". The
// policy was in force all along, so the records' trust token stays valid and no record
// is stranded by the upgrade.
func UpgradedInPlace(before runtime.Object) bool {
	old, ok := before.(*admissionv1.ValidatingAdmissionPolicy)
	if !ok || old == nil {
		return false
	}
	if same, prior := matchesUpTo(old, Policy()); same && prior {
		return true
	}
	same, _ := matchesUpTo(old, PriorPolicy())
	return same
}

// matchesUpTo reports whether old is cur but for the "stamped" variable, which may be
// cur's or one of priorStamped (prior: it is).
func matchesUpTo(old, cur *admissionv1.ValidatingAdmissionPolicy) (same, prior bool) {
	if !sameFailurePolicy(old.Spec.FailurePolicy, cur.Spec.FailurePolicy) ||
		len(old.Spec.MatchConditions) != len(cur.Spec.MatchConditions) ||
		len(old.Spec.Validations) != len(cur.Spec.Validations) ||
		len(old.Spec.Variables) != len(cur.Spec.Variables) {
		return false, false
	}
	for i, m := range cur.Spec.MatchConditions {
		if old.Spec.MatchConditions[i].Expression != m.Expression {
			return false, false
		}
	}
	for i, v := range cur.Spec.Validations {
		o := old.Spec.Validations[i]
		if o.Expression != v.Expression || o.MessageExpression != v.MessageExpression {
			return false, false
		}
	}
	for i, v := range cur.Spec.Variables {
		o := old.Spec.Variables[i]
		switch {
		case o.Name != v.Name:
			return false, false
		case o.Expression == v.Expression:
		case v.Name == "stamped" && isPriorStamped(o.Expression):
			prior = true
		default:
			return false, false
		}
	}
	return true, prior
}

func isPriorStamped(expr string) bool {
	for _, p := range priorStamped {
		if expr == p {
			return true
		}
	}
	return false
}

func sameFailurePolicy(a, b *admissionv1.FailurePolicyType) bool {
	return a != nil && b != nil && *a == *b
}
