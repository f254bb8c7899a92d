package cmd_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/rbac"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
)

func TestRoles_EachGrantsWhatItsAudienceNeedsAndNoMore(t *testing.T) {
	roles := map[string][]string{}
	labels := map[string]map[string]string{}
	for _, r := range rbac.Roles() {
		labels[r.Name] = r.Labels
		for _, rule := range r.Rules {
			for _, list := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs} {
				assert.Assert(t, !slices.Contains(list, "*"), "wildcard in %s: %+v", r.Name, rule)
			}
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, v := range rule.Verbs {
						roles[r.Name] = append(roles[r.Name], v+" "+res+"."+g)
					}
				}
			}
		}
	}
	for _, tc := range []struct {
		role, request string
		want          bool
	}{
		{rbac.ViewerRole, "list configmaps.", true},
		{rbac.ViewerRole, "watch configmaps.", true},
		{rbac.ViewerRole, "create configmaps.", false},
		{rbac.ViewerRole, "get secrets.", false},
		{rbac.ViewerRole, "list secrets.", false},
		// graph and describe: the workloads, Pods and Events beside the records.
		{rbac.ViewerRole, "list deployments.apps", true},
		{rbac.ViewerRole, "list cronjobs.batch", true},
		{rbac.ViewerRole, "list pods.", true},
		{rbac.ViewerRole, "list events.events.k8s.io", true},
		{rbac.ViewerRole, "update deployments.apps", false},
		{rbac.UserRole, "list deployments.apps", true},
		{rbac.UserRole, "list statefulsets.apps", true},
		{rbac.UserRole, "list daemonsets.apps", true},
		{rbac.UserRole, "list jobs.batch", true},
		{rbac.UserRole, "list cronjobs.batch", true},
		{rbac.UserRole, "list pods.", true},
		{rbac.UserRole, "list events.events.k8s.io", true},
		{rbac.UserRole, "list events.", true},
		{rbac.UserRole, "create configmaps.", true},
		{rbac.UserRole, "get secrets.", true},
		{rbac.UserRole, "create secrets.", true},
		{rbac.UserRole, "list secrets.", false},
		{rbac.UserRole, "update deployments.apps", true},
		{rbac.UserRole, "delete deployments.apps", false},
		{rbac.UserRole, "update cronjobs.batch", true},
		{rbac.UserRole, "create selfsubjectreviews.authentication.k8s.io", true},
		{rbac.AdminRole, "create configmaps.", true},
		{rbac.AdminRole, "get secrets.", true},
		{rbac.AdminRole, "create secrets.", false},
		{rbac.AdminRole, "list secrets.", false},
		{rbac.AdminRole, "update deployments.apps", false},
	} {
		assert.Equal(t, slices.Contains(roles[tc.role], tc.request), tc.want, "%s: %s", tc.role, tc.request)
	}
	// The built-in view must never gain Secrets; the admin role is for the catalog
	// namespace only.
	assert.Equal(t, labels[rbac.ViewerRole][install.AggregateToView], "true")
	assert.Equal(t, labels[rbac.UserRole][install.AggregateToEdit], "true")
	for k := range labels[rbac.AdminRole] {
		assert.Assert(t, !strings.HasPrefix(k, "rbac.authorization.k8s.io/aggregate-to"), k)
	}
}

func TestRBAC_PrintsYAMLWithHowToBindThem(t *testing.T) {
	t.Setenv(cmdutil.CatalogNamespaceEnv, "")
	out, err := cmdtest.RunOfflineOutput(t, "rbac")
	assert.NilError(t, err)
	assert.Assert(t, strings.HasPrefix(out, "# ClusterRoles of kubectl catalog"), out)
	// One RoleBinding per user: a second user's binding in the same namespace does not
	// collide with the first's.
	assert.Assert(t, is.Contains(out, "kubectl create rolebinding kubectl-catalog-user-NAME --clusterrole kubectl-catalog-user --user NAME -n NS\n"))
	assert.Assert(t, is.Contains(out, "--clusterrole kubectl-catalog-admin --user NAME -n catalog-system\n"))
	var names []string
	for _, doc := range strings.Split(out, "---\n") {
		var m map[string]any
		assert.NilError(t, yaml.Unmarshal([]byte(doc), &m))
		assert.Equal(t, m["kind"], "ClusterRole")
		names = append(names, m["metadata"].(map[string]any)["name"].(string))
	}
	assert.DeepEqual(t, names, []string{rbac.ViewerRole, rbac.UserRole, rbac.AdminRole})

	out, err = cmdtest.RunOfflineOutput(t, "rbac", "-o", "json")
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(out, `"kind": "List"`))

	err = cmdtest.RunOffline(t, "rbac", "-o", "wide")
	assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
	err = cmdtest.RunOffline(t, "rbac", "extra")
	assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
}

func TestRBAC_ApplyCreatesThenLeavesUnchanged(t *testing.T) {
	core := fake.NewClientset()
	var out bytes.Buffer
	o := &rbac.Options{Apply: true, Core: core, Streams: cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &bytes.Buffer{})}
	assert.NilError(t, o.Run(context.Background()))
	assert.Equal(t, out.String(), "clusterrole.rbac.authorization.k8s.io/kubectl-catalog-viewer created\n"+
		"clusterrole.rbac.authorization.k8s.io/kubectl-catalog-user created\n"+
		"clusterrole.rbac.authorization.k8s.io/kubectl-catalog-admin created\n")
	out.Reset()
	assert.NilError(t, o.Run(context.Background()))
	assert.Equal(t, strings.Count(out.String(), " unchanged\n"), 3, out.String())
	_, err := core.RbacV1().ClusterRoles().Get(context.Background(), rbac.UserRole, metav1.GetOptions{})
	assert.NilError(t, err)
}
