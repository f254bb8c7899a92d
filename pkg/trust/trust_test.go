package trust

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

const ns = "catalog-system"

func TestCheckPolicy_SaysWhetherThePolicyIsInForceAndWhyNot(t *testing.T) {
	older := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	newer := metav1.NewTime(older.Add(time.Hour))
	at := func(ts metav1.Time, obj metav1.Object) { obj.SetCreationTimestamp(ts) }
	policy := func(edit func(*admissionv1.ValidatingAdmissionPolicy)) *admissionv1.ValidatingAdmissionPolicy {
		p := Policy()
		at(older, p)
		edit(p)
		return p
	}
	binding := func(edit func(*admissionv1.ValidatingAdmissionPolicyBinding)) *admissionv1.ValidatingAdmissionPolicyBinding {
		b := Binding()
		at(older, b)
		edit(b)
		return b
	}
	token := TokenConfigMap(ns, "tok")
	at(newer, token)
	same := func(*admissionv1.ValidatingAdmissionPolicy) {}
	deny := func(*admissionv1.ValidatingAdmissionPolicyBinding) {}
	forbidden := func(resource string) func(*fake.Clientset) {
		return func(c *fake.Clientset) {
			c.PrependReactor("get", resource, func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: resource}, store.TrustPolicyName, nil)
			})
		}
	}
	for _, tc := range []struct {
		name       string
		objs       []runtime.Object
		react      func(*fake.Clientset)
		wantToken  string
		wantReason string
		tokenOnly  bool
	}{
		{name: "in force", objs: []runtime.Object{policy(same), binding(deny), token}, wantToken: "tok"},
		{name: "policy missing", objs: []runtime.Object{binding(deny), token}, wantReason: "ValidatingAdmissionPolicy kubectl-catalog-record-author is not installed"},
		{name: "binding missing", objs: []runtime.Object{policy(same), token}, wantReason: "ValidatingAdmissionPolicyBinding kubectl-catalog-record-author is not installed"},
		{name: "binding only warns", wantReason: "does not deny", objs: []runtime.Object{policy(same), token, binding(func(b *admissionv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Warn}
		})}},
		{name: "binding narrowed", wantReason: "narrowed", objs: []runtime.Object{policy(same), token, binding(func(b *admissionv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}
		})}},
		{name: "policy weakened", wantReason: "differs", objs: []runtime.Object{binding(deny), token, policy(func(p *admissionv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "true"
		})}},
		{name: "policy ignores failures", wantReason: "fail closed", objs: []runtime.Object{binding(deny), token, policy(func(p *admissionv1.ValidatingAdmissionPolicy) {
			p.Spec.FailurePolicy = ptrTo(admissionv1.Ignore)
		})}},
		{name: "policy without its selector", wantReason: "does not match", objs: []runtime.Object{binding(deny), token, policy(func(p *admissionv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules[0].Operations = []admissionv1.OperationType{admissionv1.Create}
		})}},
		{name: "policy selecting records by label", wantReason: "does not match", objs: []runtime.Object{binding(deny), token, policy(func(p *admissionv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{store.LabelManagedBy: store.ManagedBy}}
			p.Spec.MatchConditions = nil
		})}},
		{name: "policy without its label check", wantReason: "differs", objs: []runtime.Object{binding(deny), token, policy(func(p *admissionv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations = p.Spec.Validations[:1]
		})}},
		{name: "token missing", objs: []runtime.Object{policy(same), binding(deny)}, wantReason: "token ConfigMap catalog-system/catalog-trust is missing"},
		{name: "token empty", objs: []runtime.Object{policy(same), binding(deny), TokenConfigMap(ns, " ")}, wantReason: `has no "token"`},
		{name: "token older than the binding", wantReason: "older than the policy or its binding", objs: []runtime.Object{policy(same), token,
			binding(func(b *admissionv1.ValidatingAdmissionPolicyBinding) {
				b.CreationTimestamp = metav1.NewTime(newer.Add(time.Second))
			})}},
		{name: "policy unreadable: the token alone", objs: []runtime.Object{token}, react: forbidden("validatingadmissionpolicies"),
			wantToken: "tok", tokenOnly: true},
		{name: "binding unreadable: the token alone", objs: []runtime.Object{policy(same), token}, react: forbidden("validatingadmissionpolicybindings"),
			wantToken: "tok", tokenOnly: true},
		{name: "policy unreadable and no token", react: forbidden("validatingadmissionpolicies"), wantReason: "token ConfigMap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core := fake.NewClientset(tc.objs...)
			if tc.react != nil {
				tc.react(core)
			}
			st, err := CheckPolicy(context.Background(), core, ns)
			assert.NilError(t, err)
			assert.Equal(t, st.Token, tc.wantToken, "%+v", st)
			assert.Equal(t, st.InForce(), tc.wantToken != "")
			if tc.wantReason == "" {
				assert.Equal(t, st.Reason, "")
			} else {
				assert.Assert(t, is.Contains(st.Reason, tc.wantReason))
				assert.Assert(t, is.Contains(st.Reason, "kubectl catalog init"))
			}
			if tc.wantToken != "" {
				assert.Equal(t, st.TokenOnly, tc.tokenOnly)
			}
		})
	}
}

func TestCheckPolicy_OtherErrorsAreErrors(t *testing.T) {
	core := fake.NewClientset()
	core.PrependReactor("get", "validatingadmissionpolicies", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is away")
	})
	_, err := CheckPolicy(context.Background(), core, ns)
	assert.ErrorContains(t, err, "etcd is away")
}

func TestPolicy_CELNamesTheStoreKeys(t *testing.T) {
	p := Policy()
	all := ""
	for _, v := range p.Spec.Variables {
		all += v.Expression + "\n"
	}
	for _, key := range []string{store.AnnotationAuthor, store.AnnotationAuthorGroups, store.AnnotationTrustToken, store.DataKey, store.LabelManagedBy} {
		assert.Assert(t, is.Contains(all, "'"+key+"'"))
	}
	assert.Assert(t, !strings.Contains(all, "'"+store.StatusDataKey+"'"), "status writes stay free")
	assert.Equal(t, *p.Spec.FailurePolicy, admissionv1.Fail)
	assert.Assert(t, p.Spec.MatchConstraints.ObjectSelector == nil, "records are not selected by a label a writer may remove")
	assert.DeepEqual(t, Binding().Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny})
	assert.Equal(t, TokenConfigMap(ns, "x").Labels[store.LabelManagedBy], "")
}

func TestPolicy_SelectsRecordsByTheirNamePrefixes(t *testing.T) {
	p := Policy()
	assert.Equal(t, len(p.Spec.MatchConditions), 1)
	match := p.Spec.MatchConditions[0].Expression
	for prefix, kind := range store.RecordPrefixes() {
		assert.Assert(t, is.Contains(match, "'"+prefix+"': '"+kind+"'"))
		assert.Equal(t, store.ConfigMapName(kind, "x"), prefix+"x")
	}
	assert.Assert(t, !strings.Contains(match, "labels"), "a label can be removed: %s", match)
	assert.Assert(t, !strings.Contains(match, "'"+store.TrustConfigMap), "the token ConfigMap is no record")
	all := ""
	for _, v := range p.Spec.Validations {
		all += v.Expression + "\n"
	}
	assert.Assert(t, is.Contains(all, "variables.keepsLabels"))
	assert.Assert(t, is.Contains(all, "variables.labelled"))
}

func ptrTo[T any](v T) *T { return &v }
