// Package trust holds the cluster side of the records' trust model: the
// ValidatingAdmissionPolicy that makes the API server vouch for a record's
// author, its binding, the token ConfigMap that says since when they are in
// force, and CheckPolicy, which reads that state.
//
// A record is a ConfigMap anyone with ConfigMap write can forge. Under the
// policy, the API server refuses a write that creates a record, changes its
// spec (data key store.DataKey) or changes its author annotations unless the
// author annotations name the requesting user and groups. Records stamped
// with the current token were therefore written under the policy, and their
// author is the API server's word.
//
// The package does not import the engine: the engine calls CheckPolicy.
package trust

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// LabelPartOf marks the token ConfigMap as part of kubectl-catalog. The token
// ConfigMap deliberately lacks store.LabelManagedBy, so the policy does not
// apply to it.
const LabelPartOf = "app.kubernetes.io/part-of"

// PartOf is the value of LabelPartOf.
const PartOf = "kubectl-catalog"

// q quotes s as a CEL string literal. The keys quoted here contain no quote
// or backslash.
func q(s string) string { return "'" + s + "'" }

// authorKeys are the annotations only the author may set.
var authorKeys = []string{store.AnnotationAuthor, store.AnnotationAuthorGroups, store.AnnotationTrustToken}

// The policy's CEL. Missing annotations, labels or data keys read as the empty
// string through CEL optionals (obj.?field[?key].orValue), so an object
// without them is compared, not an error. oldObject is null on CREATE: it is
// only used in the UPDATE branches.
//
// The policy selects records by their name (matchConditions): the ConfigMap
// name prefix of a record kind (store.RecordPrefixes). A name cannot change,
// so no write takes a record out of the policy; labels and annotations can,
// and selecting by a label let a writer drop it and then change the spec.
var (
	// exprRecordKinds maps each record kind's ConfigMap name prefix to the kind.
	exprRecordKinds = recordKindsMap()
	// exprIsRecord matches the ConfigMaps named as records. Validating
	// admission sees a name generated from generateName.
	exprIsRecord = exprRecordKinds + ".exists(p, object.metadata.name.startsWith(p))"
	// exprKind is the kind the record's name prefix says.
	exprKind = "variables.kinds.filter(p, object.metadata.name.startsWith(p)).map(p, variables.kinds[p]).join('')"
	// exprAuthor is the write's author annotation.
	exprAuthor = "object.metadata.?annotations[?" + q(store.AnnotationAuthor) + "].orValue('')"
	// exprGroups is the write's author-groups annotation.
	exprGroups = "object.metadata.?annotations[?" + q(store.AnnotationAuthorGroups) + "].orValue('')"
	// exprAuthored: the write is one only a record's author may make. A CREATE
	// of a ConfigMap that holds a record or carries an author annotation; an
	// UPDATE that changes the record, changes an author annotation, or puts the
	// managed-by label on a ConfigMap that did not have it.
	exprAuthored = "request.operation == 'CREATE' ? (has(object.data) && " + q(store.DataKey) + " in object.data)" +
		" || " + authorKeysList() + ".exists(k, object.metadata.?annotations[?k].orValue('') != '')" +
		" : object.?data[?" + q(store.DataKey) + "].orValue('') != oldObject.?data[?" + q(store.DataKey) + "].orValue('')" +
		" || " + label("oldObject", store.LabelManagedBy) + " != " + q(store.ManagedBy) +
		" || " + authorKeysList() + ".exists(k," +
		" object.metadata.?annotations[?k].orValue('') != oldObject.metadata.?annotations[?k].orValue(''))"
	// exprStamped: the author annotations name the requesting user, with her groups in
	// one of the forms of store.EncodeGroups: joined with ",", when no group holds a ","
	// or starts with "[" (that form could not keep such groups apart), or the list form,
	// each group in double quotes with backslash and double quote escaped by a backslash.
	exprStamped = "variables.author == request.userInfo.username" +
		" && ((variables.groups == request.userInfo.?groups.orValue([]).join(',')" +
		" && !request.userInfo.?groups.orValue([]).exists(g, g.contains(',') || g.startsWith('[')))" +
		" || variables.groups == '[' + request.userInfo.?groups.orValue([]).map(g, '\"' + g.replace('\\\\', '\\\\\\\\').replace('\"', '\\\\\"') + '\"').join(',') + ']')"
	// exprLabelled: the record carries the managed-by label and the kind label
	// its name says: the labels reconcile and the commands find records by.
	exprLabelled = label("object", store.LabelManagedBy) + " == " + q(store.ManagedBy) +
		" && " + label("object", store.LabelKind) + " == variables.kind"
	// exprKeepsLabels: an UPDATE leaves the managed-by label and the kind label
	// of a record that had them as they were.
	exprKeepsLabels = "request.operation != 'UPDATE' || ((" + label("oldObject", store.LabelManagedBy) + " != " + q(store.ManagedBy) +
		" || " + label("object", store.LabelManagedBy) + " == " + q(store.ManagedBy) + ")" +
		" && (" + label("oldObject", store.LabelKind) + " == '' || " + label("object", store.LabelKind) + " == " + label("oldObject", store.LabelKind) + "))"

	exprValidation = "!variables.authored || variables.stamped"
	exprMessage    = "'ConfigMap ' + object.metadata.name + ' is a kubectl-catalog record: its spec and author annotations" +
		" may only be written by the user the annotation " + store.AnnotationAuthor + " names, with the groups " +
		store.AnnotationAuthorGroups + " lists; you are ' + request.userInfo.username + '." +
		" Write records with kubectl catalog, which stamps you as their author.'"
	// exprMigratedFrom is the write's migrated-from annotation, which gives a record
	// "migrate svcat" wrote precedence over an OSB id bound to nothing while its id claim
	// is not made (authority.lateMigratedUser).
	exprMigratedFrom = "object.metadata.?annotations[?" + q(store.AnnotationMigratedFrom) + "].orValue('')"
	// exprSetsMigratedFrom: the write sets or changes the migrated-from annotation.
	exprSetsMigratedFrom = "variables.migratedFrom != (request.operation == 'UPDATE' ? oldObject.metadata.?annotations[?" + q(store.AnnotationMigratedFrom) + "].orValue('') : '')"
	// exprSvcatResource is the retired Service Catalog's resource of the record's kind.
	exprSvcatResource = "variables.kind == 'ServiceBinding' ? 'servicebindings' : variables.kind == 'ServiceInstance' ? 'serviceinstances' : 'servicebrokers'"
	// exprMigratedValidation: the migrated-from annotation is set or changed only by the
	// record's author (the write stamps the requesting user) or by a user who may read
	// the Service Catalog's objects of the record's kind in its namespace (who may run
	// "migrate svcat" there).
	exprMigratedValidation = "!variables.setsMigratedFrom || variables.stamped || authorizer.group(" + q(SvcatGroup) + ").resource(" + exprSvcatResource + ").namespace(object.metadata.namespace).check('get').allowed()"
	exprMigratedMessage    = "'ConfigMap ' + object.metadata.name + ' is a kubectl-catalog record: its annotation " + store.AnnotationMigratedFrom +
		" may only be set or changed by the author of the record or by a user who may read the objects of the retired Service Catalog (" + SvcatGroup + ") in namespace ' + object.metadata.namespace + '; you are ' + request.userInfo.username + '." +
		" Records are migrated by kubectl catalog migrate svcat.'"
	exprLabelsValidation = "variables.keepsLabels && (!variables.authored || variables.labelled)"
	exprLabelsMessage    = "'ConfigMap ' + object.metadata.name + ' is a kubectl-catalog record: it carries the labels " +
		store.LabelManagedBy + "=" + store.ManagedBy + " and " + store.LabelKind + "=' + variables.kind + ', which may not be removed or changed." +
		" Delete the record (kubectl catalog deprovision, unbind or deregister) instead of unlabelling it.'"
)

// label is the CEL of obj's label key, "" when missing.
func label(obj, key string) string {
	return obj + ".metadata.?labels[?" + q(key) + "].orValue('')"
}

func authorKeysList() string {
	quoted := make([]string, len(authorKeys))
	for i, k := range authorKeys {
		quoted[i] = q(k)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

func recordKindsMap() string {
	m := store.RecordPrefixes()
	prefixes := slices.Sorted(maps.Keys(m))
	entries := make([]string, len(prefixes))
	for i, p := range prefixes {
		entries[i] = q(p) + ": " + q(m[p])
	}
	return "{" + strings.Join(entries, ", ") + "}"
}

// SvcatGroup is the API group of the retired Service Catalog's objects.
const SvcatGroup = "servicecatalog.k8s.io"

// Policy is the ValidatingAdmissionPolicy store.TrustPolicyName.
func Policy() *admissionv1.ValidatingAdmissionPolicy {
	p := PriorPolicy()
	p.Spec.Variables = append(p.Spec.Variables,
		admissionv1.Variable{Name: "migratedFrom", Expression: exprMigratedFrom},
		admissionv1.Variable{Name: "setsMigratedFrom", Expression: exprSetsMigratedFrom})
	p.Spec.Validations = append(p.Spec.Validations, admissionv1.Validation{
		Expression:        exprMigratedValidation,
		MessageExpression: exprMigratedMessage,
		Message:           "a kubectl-catalog record's migrated-from annotation may only be set or changed by its author or by a user who may read the retired Service Catalog's objects in its namespace",
		Reason:            ptr.To(metav1.StatusReasonForbidden),
	})
	return p
}

// PriorPolicy is the policy of the earlier release: Policy without the check of who
// sets the migrated-from annotation. It vouched for authors as Policy does, so where it
// is installed the policy is in force, but the annotation is anyone's who may write the
// record's ConfigMap (State.MigratedFrom is false).
func PriorPolicy() *admissionv1.ValidatingAdmissionPolicy {
	return &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: store.TrustPolicyName, Labels: labels()},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			// An expression that cannot be evaluated refuses the write: the
			// policy exists to refuse forgeries, so it fails closed.
			FailurePolicy: ptr.To(admissionv1.Fail),
			// Every ConfigMap write is matched, then matchConditions keep the
			// records, by a name no write can change.
			MatchConstraints: &admissionv1.MatchResources{
				ResourceRules: []admissionv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionv1.RuleWithOperations{
						Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
						Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
							Resources: []string{"configmaps"}},
					},
				}},
			},
			MatchConditions: []admissionv1.MatchCondition{{Name: "record", Expression: exprIsRecord}},
			Variables: []admissionv1.Variable{
				{Name: "kinds", Expression: exprRecordKinds},
				{Name: "kind", Expression: exprKind},
				{Name: "author", Expression: exprAuthor},
				{Name: "groups", Expression: exprGroups},
				{Name: "authored", Expression: exprAuthored},
				{Name: "stamped", Expression: exprStamped},
				{Name: "labelled", Expression: exprLabelled},
				{Name: "keepsLabels", Expression: exprKeepsLabels},
			},
			Validations: []admissionv1.Validation{{
				Expression:        exprValidation,
				MessageExpression: exprMessage,
				Message:           "a kubectl-catalog record's spec and author annotations may only be written by its author: write records with kubectl catalog, which stamps you as their author",
				Reason:            ptr.To(metav1.StatusReasonForbidden),
			}, {
				Expression:        exprLabelsValidation,
				MessageExpression: exprLabelsMessage,
				Message:           "a kubectl-catalog record keeps its managed-by and kind labels: delete the record instead of unlabelling it",
				Reason:            ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
}

// Binding is the ValidatingAdmissionPolicyBinding store.TrustPolicyName: the
// policy, everywhere, denying.
func Binding() *admissionv1.ValidatingAdmissionPolicyBinding {
	return &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: store.TrustPolicyName, Labels: labels()},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        store.TrustPolicyName,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
}

// TokenConfigMap is the ConfigMap store.TrustConfigMap in namespace holding
// token.
func TokenConfigMap(namespace, token string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: store.TrustConfigMap, Namespace: namespace, Labels: labels()},
		Data:       map[string]string{store.TrustTokenKey: token},
	}
}

func labels() map[string]string {
	return map[string]string{LabelPartOf: PartOf}
}

// State is whether the trust policy is in force.
type State struct {
	// Token is the current token when the policy is in force; records
	// stamped with it have an author the API server vouched for. Empty when
	// not in force.
	Token string
	// Reason says why the policy is not in force, and what to run. Empty
	// when it is.
	Reason string
	// MigratedFrom: the policy in force is this release's, which admits a write that
	// sets or changes a record's migrated-from annotation only from the record's author
	// or a user who may read the retired Service Catalog's objects in its namespace. False
	// when not in force, when the installed policy is an earlier release's (Older), and
	// when it may not be read (TokenOnly).
	MigratedFrom bool
	// Older says, when the policy in force is an earlier release's, what it lacks and
	// what to run. Empty otherwise.
	Older string
	// TokenOnly is true when reading the policy or its binding was forbidden
	// (ordinary users may not read them): Token then rests on the token
	// ConfigMap alone, which only those who may install the policy should be
	// able to write.
	TokenOnly bool
}

// InForce reports whether records stamped with s.Token have a verified author.
func (s State) InForce() bool { return s.Token != "" }

// String describes the state in a line.
func (s State) String() string {
	switch {
	case !s.InForce():
		return "not in force: " + s.Reason
	case s.TokenOnly:
		return "in force, as far as the token ConfigMap tells (reading the policy and its binding is forbidden)"
	}
	return "in force"
}

const fix = `an administrator runs "kubectl catalog init"`

// CheckPolicy reads the trust state of the cluster: the policy and its
// binding as Policy and Binding build them, and the token ConfigMap in
// catalogNamespace, created after both. The three are read together, in one
// round trip, and judged in that order. Errors are for requests that failed
// for another reason than the objects' absence or the caller's lack of
// permission.
func CheckPolicy(ctx context.Context, kube kubernetes.Interface, catalogNamespace string) (State, error) {
	return readObjects(ctx, kube, catalogNamespace).state(catalogNamespace)
}

// objects are the trust policy's objects as read, each with its error.
type objects struct {
	pol        *admissionv1.ValidatingAdmissionPolicy
	polErr     error
	binding    *admissionv1.ValidatingAdmissionPolicyBinding
	bindingErr error
	token      *corev1.ConfigMap
	tokenErr   error
}

// readObjects reads the policy, its binding and the token ConfigMap together.
func readObjects(ctx context.Context, kube kubernetes.Interface, catalogNamespace string) objects {
	var o objects
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		o.pol, o.polErr = kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, store.TrustPolicyName, metav1.GetOptions{})
	}()
	go func() {
		defer wg.Done()
		o.binding, o.bindingErr = kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, store.TrustPolicyName, metav1.GetOptions{})
	}()
	o.token, o.tokenErr = kube.CoreV1().ConfigMaps(catalogNamespace).Get(ctx, store.TrustConfigMap, metav1.GetOptions{})
	wg.Wait()
	return o
}

// storedToken is the token the ConfigMap holds as stored, for the author stamp of
// records: "" when it is missing or may not be read; an error when reading it failed
// otherwise.
func (o objects) storedToken(catalogNamespace string) (string, error) {
	switch err := o.tokenErr; {
	case err == nil:
		return o.token.Data[store.TrustTokenKey], nil
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return "", nil
	default:
		return "", fmt.Errorf("cannot read the catalog's trust token (ConfigMap %s/%s): %w", catalogNamespace, store.TrustConfigMap, err)
	}
}

// state judges the objects read: the policy first, then its binding, then the token.
func (o objects) state(catalogNamespace string) (State, error) {
	var st State
	notInForce := func(format string, args ...any) (State, error) {
		return State{Reason: fmt.Sprintf(format, args...)}, nil
	}
	var newest metav1.Time
	switch err := o.polErr; {
	case apierrors.IsNotFound(err):
		return notInForce("ValidatingAdmissionPolicy %s is not installed: %s", store.TrustPolicyName, fix)
	case apierrors.IsForbidden(err):
		st.TokenOnly = true
	case err != nil:
		return st, fmt.Errorf("cannot read ValidatingAdmissionPolicy %s: %w", store.TrustPolicyName, err)
	default:
		switch why := policyDiffers(o.pol, Policy()); {
		case why == "":
			st.MigratedFrom = true
		case policyDiffers(o.pol, PriorPolicy()) == "":
			st.Older = fmt.Sprintf("ValidatingAdmissionPolicy %s is an earlier release's: it does not check who sets a record's annotation %s, so the engine gives a migrated record no precedence over an OSB id in another namespace: %s (it upgrades the policy in place and keeps the token)",
				store.TrustPolicyName, store.AnnotationMigratedFrom, fix)
		default:
			return notInForce("ValidatingAdmissionPolicy %s %s: %s", store.TrustPolicyName, why, fix)
		}
		newest = o.pol.CreationTimestamp
	}
	if !st.TokenOnly {
		switch err := o.bindingErr; {
		case apierrors.IsNotFound(err):
			return notInForce("ValidatingAdmissionPolicyBinding %s is not installed, so the policy is not enforced: %s", store.TrustPolicyName, fix)
		case apierrors.IsForbidden(err):
			st.TokenOnly = true
		case err != nil:
			return st, fmt.Errorf("cannot read ValidatingAdmissionPolicyBinding %s: %w", store.TrustPolicyName, err)
		default:
			if why := bindingDiffers(o.binding); why != "" {
				return notInForce("ValidatingAdmissionPolicyBinding %s %s: %s", store.TrustPolicyName, why, fix)
			}
			if newest.Before(&o.binding.CreationTimestamp) {
				newest = o.binding.CreationTimestamp
			}
		}
	}
	switch err := o.tokenErr; {
	case apierrors.IsNotFound(err):
		return notInForce("the token ConfigMap %s/%s is missing: %s", catalogNamespace, store.TrustConfigMap, fix)
	case apierrors.IsForbidden(err):
		return notInForce("cannot read the token ConfigMap %s/%s (forbidden): ask for get on ConfigMaps in namespace %s", catalogNamespace, store.TrustConfigMap, catalogNamespace)
	case err != nil:
		return st, fmt.Errorf("cannot read the token ConfigMap %s/%s: %w", catalogNamespace, store.TrustConfigMap, err)
	}
	cm := o.token
	token := strings.TrimSpace(cm.Data[store.TrustTokenKey])
	if token == "" {
		return notInForce("the token ConfigMap %s/%s has no %q: %s", catalogNamespace, store.TrustConfigMap, store.TrustTokenKey, fix)
	}
	// A token older than the policy or its binding may have been read, and
	// stamped on forged records, while they were missing.
	if cm.CreationTimestamp.Before(&newest) {
		return notInForce("the token ConfigMap %s/%s is older than the policy or its binding (they were created anew since): %s", catalogNamespace, store.TrustConfigMap, fix)
	}
	st.Token = token
	if st.TokenOnly {
		st.MigratedFrom, st.Older = false, ""
	}
	return st, nil
}

// policyDiffers says how a served policy falls short of want (Policy, or the earlier
// release's), or "". Only the fields Policy sets and the API server does not default are
// compared.
func policyDiffers(got, wantPolicy *admissionv1.ValidatingAdmissionPolicy) string {
	want := wantPolicy.Spec
	s := got.Spec
	switch {
	case s.FailurePolicy == nil || *s.FailurePolicy != admissionv1.Fail:
		return "does not fail closed (failurePolicy is not Fail)"
	case s.MatchConstraints == nil || !emptySelector(s.MatchConstraints.ObjectSelector) ||
		len(s.MatchConstraints.ExcludeResourceRules) > 0 || !rulesCover(s.MatchConstraints.ResourceRules) ||
		!emptySelector(s.MatchConstraints.NamespaceSelector) || !slices.Equal(s.MatchConditions, want.MatchConditions):
		return "does not match every record ConfigMap write"
	case !slices.Equal(s.Variables, want.Variables) || s.ParamKind != nil || !sameValidations(s.Validations, want.Validations):
		return "differs from the one kubectl catalog installs"
	}
	return ""
}

func sameValidations(got, want []admissionv1.Validation) bool {
	return slices.EqualFunc(got, want, func(a, b admissionv1.Validation) bool { return a.Expression == b.Expression })
}

func bindingDiffers(b *admissionv1.ValidatingAdmissionPolicyBinding) string {
	s := b.Spec
	switch {
	case s.PolicyName != store.TrustPolicyName:
		return fmt.Sprintf("binds policy %q, not %q", s.PolicyName, store.TrustPolicyName)
	case !slices.Contains(s.ValidationActions, admissionv1.Deny):
		return "does not deny (validationActions lacks Deny)"
	case s.MatchResources != nil && (len(s.MatchResources.ResourceRules) > 0 || len(s.MatchResources.ExcludeResourceRules) > 0 ||
		!emptySelector(s.MatchResources.NamespaceSelector) || !emptySelector(s.MatchResources.ObjectSelector)):
		return "is narrowed by matchResources"
	}
	return ""
}

func emptySelector(s *metav1.LabelSelector) bool {
	return s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0)
}

// rulesCover reports whether rules match CREATE and UPDATE of core v1
// ConfigMaps.
func rulesCover(rules []admissionv1.NamedRuleWithOperations) bool {
	has := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	for _, op := range []admissionv1.OperationType{admissionv1.Create, admissionv1.Update} {
		ok := false
		for _, r := range rules {
			ops := r.Operations
			if (slices.Contains(ops, op) || slices.Contains(ops, admissionv1.OperationAll)) &&
				has(r.APIGroups, "") && has(r.APIVersions, "v1") && has(r.Resources, "configmaps") && len(r.ResourceNames) == 0 {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
