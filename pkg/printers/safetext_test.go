package printers

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// evil is text a namespace broker or a ConfigMap writer chooses: it clears the screen,
// sets the window title, returns to the start of the line and reverses what follows.
const evil = "gold\x1b[2J\x1b]0;pwned\x07\r\u202eevil"

// Every table prints names, descriptions and status reasons others wrote with their
// control characters escaped.
func TestTables_EscapeControlCharacters(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	class := v1alpha1.ServiceClass{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "c"},
		Spec: v1alpha1.ServiceClassSpec{ExternalName: evil, BrokerName: "b", Description: evil,
			Plans: []v1alpha1.ServicePlan{{ID: "p", ExternalName: evil, Description: evil}}}}
	refused := []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: evil, Message: evil}}
	for _, tc := range []struct {
		name  string
		print func(w *bytes.Buffer) error
	}{
		{"brokers", func(w *bytes.Buffer) error {
			return BrokerTable(w, []v1alpha1.Broker{{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: v1alpha1.BrokerSpec{URL: "https://x/" + evil},
				Status: v1alpha1.BrokerStatus{Conditions: refused}}}, true, true, now)
		}},
		{"classes", func(w *bytes.Buffer) error { return ClassTable(w, []v1alpha1.ServiceClass{class}, true, true, now) }},
		{"plans", func(w *bytes.Buffer) error {
			return PlanTable(w, []PlanRow{{Class: &class, Plan: &class.Spec.Plans[0]}}, true, true)
		}},
		{"instances", func(w *bytes.Buffer) error {
			return InstanceTable(w, []v1alpha1.ServiceInstance{{ObjectMeta: metav1.ObjectMeta{Name: "i"},
				Spec:   v1alpha1.ServiceInstanceSpec{ClassExternalName: evil, PlanExternalName: evil, BrokerName: "b"},
				Status: v1alpha1.ServiceInstanceStatus{OperationStatus: v1alpha1.OperationStatus{Conditions: refused}}}}, true, true, now)
		}},
		{"bindings", func(w *bytes.Buffer) error {
			return BindingTable(w, []v1alpha1.ServiceBinding{{ObjectMeta: metav1.ObjectMeta{Name: "b"},
				Spec:   v1alpha1.ServiceBindingSpec{InstanceName: "i", SecretName: "s"},
				Status: v1alpha1.ServiceBindingStatus{OperationStatus: v1alpha1.OperationStatus{Conditions: refused}}}}, true, true, now)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			assert.NilError(t, tc.print(&b))
			out := b.String()
			assert.Assert(t, strings.Contains(out, "gold^[") || tc.name == "bindings" && strings.Contains(out, "^["), out)
			for _, c := range []string{"\x1b", "\x07", "\r", "\u202e"} {
				assert.Check(t, !strings.Contains(out, c), "%q in %q", c, out)
			}
			if tc.name != "bindings" && tc.name != "brokers" {
				assert.Check(t, is.Contains(out, `\u202eevil`))
			}
		})
	}
}
