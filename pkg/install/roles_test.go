package install

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

func TestRoleBindingCommand_NamesTheBindingAfterItsUser(t *testing.T) {
	for _, tc := range []struct{ role, user, ns, want string }{
		{UserRole, "alice", "team-a", "kubectl create rolebinding kubectl-catalog-user-alice --clusterrole kubectl-catalog-user --user alice -n team-a"},
		{UserRole, "bob", "team-a", "kubectl create rolebinding kubectl-catalog-user-bob --clusterrole kubectl-catalog-user --user bob -n team-a"},
		{ViewerRole, "", "catalog-system", "kubectl create rolebinding kubectl-catalog-viewer-NAME --clusterrole kubectl-catalog-viewer --user NAME -n catalog-system"},
		{UserRole, "system:serviceaccount:ci:deployer", "dev", "kubectl create rolebinding kubectl-catalog-user-deployer --clusterrole kubectl-catalog-user --serviceaccount ci:deployer -n dev"},
	} {
		assert.Equal(t, RoleBindingCommand(tc.role, tc.user, tc.ns), tc.want)
	}
}

func TestNextRun(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		assert.NilError(t, err)
		return v
	}
	for _, tc := range []struct {
		schedule, after, want string
		ok                    bool
	}{
		{"*/5 * * * *", "2026-12-06T12:21:45Z", "2026-12-06T12:25:00Z", true},
		{"*/5 * * * *", "2026-12-06T12:25:00Z", "2026-12-06T12:30:00Z", true},
		{"0 * * * *", "2026-12-06T12:21:45Z", "2026-12-06T13:00:00Z", true},
		{"30 2 * * 1-5", "2026-12-05T12:00:00Z", "2026-12-07T02:30:00Z", true}, // Saturday to Monday
		{"0 0 1 * 0", "2026-12-02T00:00:00Z", "2026-12-06T00:00:00Z", true},    // the 1st or a Sunday
		{"@hourly", "2026-12-06T12:00:00Z", "2026-12-06T13:00:00Z", true},
		{"0 0 * JAN *", "2026-12-06T12:00:00Z", "", false},
		{"61 * * * *", "2026-12-06T12:00:00Z", "", false},
		{"0 0 1 1 *", "2026-12-06T12:00:00Z", "", false}, // more than eight days ahead
	} {
		got, ok := NextRun(tc.schedule, at(tc.after))
		assert.Equal(t, ok, tc.ok, tc.schedule)
		if tc.ok {
			assert.Equal(t, got, at(tc.want), tc.schedule)
		}
	}
}
