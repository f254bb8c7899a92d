package cmd_test

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// pagedCluster holds instances and bindings in namespaces whose names are prefixes of
// each other ("team", "team-a": the API server lists "team-a" first), and serves lists
// one record a page.
func pagedCluster(t *testing.T) *storetest.Cluster {
	t.Helper()
	ctx := context.Background()
	c := storetest.NewCluster()
	st := c.Store()
	for _, r := range [][2]string{{"team", "b"}, {"team-a", "x"}, {"team", "a"}, {"dev", "c"}} {
		inst := storetest.SampleInstance()
		inst.Namespace, inst.Name = r[0], r[1]
		_, err := st.Instances().Create(ctx, inst)
		assert.NilError(t, err)
		b := storetest.SampleBinding()
		b.Namespace, b.Name, b.Spec.InstanceName = r[0], "bind-"+r[1], r[1]
		_, err = st.Bindings().Create(ctx, b)
		assert.NilError(t, err)
	}
	c.SetMaxPageSize(1)
	return c
}

// firstColumns is the first two columns of each line of a table.
func firstColumns(out string) []string {
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		rows = append(rows, f[0]+" "+f[1])
	}
	return rows
}

// TestGet_AllNamespaces_PagesMakeTheSameTable: get -A makes its table a page at a time
// and keeps rows, not records; the rows are in the order of namespaces and names all
// the same, and a list that starts again (its snapshot expired) prints no row twice.
func TestGet_AllNamespaces_PagesMakeTheSameTable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		expire int
		want   []string
	}{
		{name: "instances", args: []string{"get", "instances", "-A"},
			want: []string{"NAMESPACE NAME", "dev c", "team a", "team b", "team-a x"}},
		{name: "instances, wide, snapshot expired", args: []string{"get", "instances", "-A", "-o", "wide"}, expire: 1,
			want: []string{"NAMESPACE NAME", "dev c", "team a", "team b", "team-a x"}},
		{name: "bindings", args: []string{"get", "bindings", "-A"},
			want: []string{"NAMESPACE NAME", "dev bind-c", "team bind-a", "team bind-b", "team-a bind-x"}},
		{name: "bindings, no headers, snapshot expired", args: []string{"get", "bindings", "-A", "--no-headers"}, expire: 1,
			want: []string{"dev bind-c", "team bind-a", "team bind-b", "team-a bind-x"}},
		{name: "one namespace", args: []string{"get", "instances", "-n", "team"},
			want: []string{"NAME CLASS", "a postgres", "b postgres"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := pagedCluster(t)
			c.ExpireContinueTokens(tc.expire)
			out, errOut, code := run(t, c, storetest.SampleTime().Time, tc.args...)
			assert.Equal(t, code, 0, errOut)
			assert.DeepEqual(t, firstColumns(out), tc.want)
		})
	}
}

func TestGet_AllNamespaces_ByPages_NamesNotFoundAndNone(t *testing.T) {
	c := pagedCluster(t)
	out, errOut, code := run(t, c, storetest.SampleTime().Time, "get", "instances", "-A", "a", "x", "bb")
	assert.Equal(t, code, 1, errOut)
	assert.DeepEqual(t, firstColumns(out), []string{"NAMESPACE NAME", "team a", "team-a x"})
	assert.Check(t, is.Contains(errOut, `instance "bb" not found; did you mean "b"?`))

	out, errOut, code = run(t, c, storetest.SampleTime().Time, "get", "instances", "-A", "-l", "no=such")
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "")
	assert.Check(t, is.Contains(errOut, "No instances found in any namespace."))
}
