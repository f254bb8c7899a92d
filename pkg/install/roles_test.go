package install

import (
	"testing"

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
