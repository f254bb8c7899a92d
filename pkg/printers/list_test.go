package printers

import (
	"bytes"
	"errors"
	"testing"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
)

func listFlags(t *testing.T, args ...string) *ListFlags {
	t.Helper()
	var l ListFlags
	cmd := &cobra.Command{Use: "x"}
	l.AddFlags(cmd, "brokers")
	assert.NilError(t, cmd.ParseFlags(args))
	assert.NilError(t, l.Validate())
	return &l
}

func TestSortItems_NumbersByValueMissingFirstStable(t *testing.T) {
	b := func(name string, classes int32) v1alpha1.Broker {
		return v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1alpha1.BrokerStatus{ClassCount: classes}}
	}
	items := []v1alpha1.Broker{b("ten", 10), b("nine", 9), b("none", 0), b("also-nine", 9)}
	for _, expr := range []string{"{.status.classCount}", ".status.classCount", "status.classCount"} {
		got := append([]v1alpha1.Broker(nil), items...)
		assert.NilError(t, SortItems(listFlags(t, "--sort-by", expr), got, func(b *v1alpha1.Broker) runtime.Object { return b }))
		var names []string
		for _, x := range got {
			names = append(names, x.Name)
		}
		// classCount 0 is omitted from the JSON: missing sorts first.
		assert.DeepEqual(t, names, []string{"none", "nine", "also-nine", "ten"})
	}
}

func TestListFlags_NoHeadersDropsTheHeaderRow(t *testing.T) {
	var b bytes.Buffer
	tbl := NewTable(listFlags(t, "--no-headers").Out(&b), "NAME", "STATUS")
	tbl.Append("a", "Ready")
	assert.NilError(t, tbl.Render())
	assert.Equal(t, b.String(), "a   Ready\n")
}

func TestListFlags_InvalidIsAUsageError(t *testing.T) {
	for _, args := range [][]string{{"-l", "a in ("}, {"--sort-by", "{{.a}}"}, {"--sort-by", "{.a[}"}} {
		var l ListFlags
		cmd := &cobra.Command{Use: "x"}
		l.AddFlags(cmd, "brokers")
		assert.NilError(t, cmd.ParseFlags(args))
		assert.Assert(t, isUsageError(l.Validate()), "%v", args)
	}
}

// isUsageError reports whether err is a usage error (the command exits with the usage
// status).
func isUsageError(err error) bool {
	var usage *iostreams.UsageError
	return errors.As(err, &usage)
}
