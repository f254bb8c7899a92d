package printers

import (
	"bytes"
	"testing"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

func parse(t *testing.T, wide bool, args ...string) *OutputFlags {
	t.Helper()
	o := NewOutputFlags(wide)
	cmd := &cobra.Command{Use: "x"}
	o.AddFlags(cmd)
	assert.NilError(t, cmd.ParseFlags(args))
	return o
}

func brokers() *v1alpha1.BrokerList {
	return &v1alpha1.BrokerList{Items: []v1alpha1.Broker{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "catalog-system"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "catalog-system"}},
	}}
}

func TestOutputFlags_Formats(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-o", "name"}, "broker.catalog.kubectl-catalog.io/a\nbroker.catalog.kubectl-catalog.io/b\n"},
		{[]string{"-o", "jsonpath={.items[*].metadata.name}"}, "a b"},
		{[]string{"-o", "go-template={{range .items}}{{.metadata.name}};{{end}}"}, "a;b;"},
	}
	for _, tc := range cases {
		t.Run(tc.args[1], func(t *testing.T) {
			o := parse(t, false, tc.args...)
			assert.NilError(t, o.Validate())
			assert.Assert(t, !o.IsTable())
			var b bytes.Buffer
			assert.NilError(t, o.PrintObject(brokers(), &b))
			assert.Equal(t, b.String(), tc.want)
		})
	}
}

func TestOutputFlags_JSONAndYAMLCarryTheKind(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		o := parse(t, false, "-o", format)
		var b bytes.Buffer
		assert.NilError(t, o.PrintObject(brokers(), &b))
		assert.Assert(t, is.Contains(b.String(), "BrokerList"))
		assert.Assert(t, is.Contains(b.String(), "catalog.kubectl-catalog.io/v1alpha1"))
	}
}

func TestOutputFlags_TableAndWide(t *testing.T) {
	assert.Assert(t, parse(t, false).IsTable())
	w := parse(t, true, "-o", "wide")
	assert.Assert(t, w.IsTable() && w.IsWide())
	assert.NilError(t, w.Validate())
}

func TestOutputFlags_UnknownFormatIsAUsageError(t *testing.T) {
	for _, args := range [][]string{{"-o", "xml"}, {"-o", "wide"}} {
		o := parse(t, false, args...)
		err := o.Validate()
		assert.Assert(t, isUsageError(err), "%v: %v", args, err)
	}
}
