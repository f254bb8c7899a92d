package reconcile

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
)

// outputFlags is -o as parsed from "-o format".
func outputFlags(format string) *printers.OutputFlags {
	o := newOutputFlags()
	o.Output = format
	return o
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		err  string
	}{
		{name: "defaults", o: Options{Workers: 8, MaxDuration: 5 * time.Minute, Interval: time.Second}},
		{name: "shard", o: Options{Workers: 1, Interval: time.Second, ShardFlag: "1/3"}},
		{name: "no workers", o: Options{Workers: 0, Interval: time.Second}, err: "--workers"},
		{name: "negative duration", o: Options{Workers: 1, Interval: time.Second, MaxDuration: -time.Second}, err: "--max-duration"},
		{name: "bad shard", o: Options{Workers: 1, Interval: time.Second, ShardFlag: "3/3"}, err: "--shard"},
		{name: "bad output", o: Options{Workers: 1, Interval: time.Second, Output: outputFlags("wide")}, err: "--output"},
		{name: "bad interval", o: Options{Workers: 1}, err: "--interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if tc.err == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.err)
			assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
		})
	}
}

func TestPrint(t *testing.T) {
	until := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sum := reconcile.Summary{
		Counts: map[reconcile.Outcome]int{reconcile.Done: 1, reconcile.Waiting: 1, reconcile.Failed: 1},
		Items: []reconcile.Item{
			{Namespace: "dev", Kind: "ServiceInstance", Name: "a", Outcome: reconcile.Done, Detail: "deprovisioned"},
			{Namespace: "dev", Kind: "ServiceInstance", Name: "b", Outcome: reconcile.Waiting, Until: &until, Detail: "broker\ndown"},
			{Namespace: "dev", Kind: "ServiceInstance", Name: "c", Outcome: reconcile.Failed, Detail: "ProvisionRejected: no"},
		},
		TimeUp: true,
	}
	for _, tc := range []struct {
		format string
		want   []string
	}{
		{format: "", want: []string{"NAMESPACE", "OUTCOME", "waiting until 2026-01-02T03:04:05Z", "broker down", "failed"}},
		{format: "json", want: []string{`"outcome": "waiting"`, `"until": "2026-01-02T03:04:05Z"`, `"timeUp": true`}},
		{format: "yaml", want: []string{"outcome: failed", "timeUp: true"}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			var out, errOut bytes.Buffer
			assert.NilError(t, Print(&out, &errOut, tc.format, sum))
			for _, w := range tc.want {
				assert.Assert(t, is.Contains(out.String(), w))
			}
			if tc.format == "json" {
				var back reconcile.Summary
				assert.NilError(t, json.Unmarshal(out.Bytes(), &back))
				assert.Equal(t, len(back.Items), 3)
			}
			if tc.format == "" {
				assert.Assert(t, is.Contains(errOut.String(), "3 records: 1 done, 1 waiting, 1 failed; --max-duration ran out"))
			}
		})
	}
	var out, errOut bytes.Buffer
	assert.NilError(t, Print(&out, &errOut, "", reconcile.Summary{}))
	assert.Equal(t, out.String(), "")
	assert.Assert(t, strings.Contains(errOut.String(), "Nothing to reconcile"))
}
