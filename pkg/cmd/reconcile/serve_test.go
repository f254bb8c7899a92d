package reconcile

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile/serve"
)

// serveOptions parses args into Options as the command does, with the flags Validate
// looks at, and sets the defaults --serve changes as Complete does.
func serveOptions(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	o := &Options{Workers: 8, Interval: 2 * time.Second}
	cmd := &cobra.Command{}
	fs := cmd.Flags()
	fs.DurationVar(&o.MaxDuration, "max-duration", 5*time.Minute, "")
	fs.DurationVar(&o.RetryHorizon, "retry-horizon", DefaultRetryHorizon, "")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, "")
	o.Output = newOutputFlags()
	o.Output.AddFlags(cmd)
	o.Serve.AddFlags(cmd)
	assert.NilError(t, fs.Parse(args))
	if err := o.Validate(); err != nil {
		return o, err
	}
	o.serveDefaults()
	return o, nil
}

func TestValidate_Serve(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		err  string
		// maxDuration is the bound of each run once validated.
		maxDuration time.Duration
		// horizon is the retry horizon of each run once validated (10s when 0).
		horizon time.Duration
	}{
		{name: "one run", maxDuration: 5 * time.Minute},
		{name: "one run, without horizon", args: []string{"--retry-horizon", "0"}, maxDuration: 5 * time.Minute, horizon: -1},
		{name: "one run, a longer horizon", args: []string{"--retry-horizon", "1m"}, maxDuration: 5 * time.Minute, horizon: time.Minute},
		{name: "a negative horizon", args: []string{"--retry-horizon", "-1s"}, err: "--retry-horizon must not be negative"},
		{name: "serve: runs bounded by the interval", args: []string{"--serve"}, maxDuration: 30 * time.Second, horizon: -1},
		{name: "serve with a horizon", args: []string{"--serve", "--retry-horizon", "5s"}, maxDuration: 30 * time.Second, horizon: 5 * time.Second},
		{name: "serve with an interval", args: []string{"--serve", "--serve-interval", "1m"}, maxDuration: time.Minute, horizon: -1},
		{name: "serve with its own bound", args: []string{"--serve", "--max-duration", "10s"}, maxDuration: 10 * time.Second, horizon: -1},
		{name: "serve without bound", args: []string{"--serve", "--max-duration", "0"}, maxDuration: 0, horizon: -1},
		{name: "serve and dry run", args: []string{"--serve", "--dry-run"}, err: "--serve and --dry-run cannot go together"},
		{name: "serve and output", args: []string{"--serve", "-o", "json"}, err: "--serve and --output cannot go together"},
		{name: "listen without serve", args: []string{"--listen", ":9090"}, err: "--listen needs --serve"},
		{name: "interval without serve", args: []string{"--serve-interval", "1m"}, err: "--serve-interval needs --serve"},
		{name: "bad listen", args: []string{"--serve", "--listen", "8080"}, err: "--listen \"8080\""},
		{name: "zero interval", args: []string{"--serve", "--serve-interval", "0s"}, err: "--serve-interval must be positive"},
		{name: "zero grace", args: []string{"--serve", "--shutdown-grace", "0s"}, err: "--shutdown-grace must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := serveOptions(t, tc.args...)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, o.MaxDuration, tc.maxDuration)
			switch tc.horizon {
			case 0:
				assert.Equal(t, o.RetryHorizon, DefaultRetryHorizon)
			case -1:
				assert.Equal(t, o.RetryHorizon, time.Duration(0))
			default:
				assert.Equal(t, o.RetryHorizon, tc.horizon)
			}
		})
	}
}

func TestReconcile_ServeWithDryRunIsAUsageError(t *testing.T) {
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(nil, &out, &errOut))
	cmd := NewCmdReconcile(f, nil)
	cmd.SetArgs([]string{"--serve", "--dry-run"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(context.Background())
	assert.ErrorContains(t, err, "--serve and --dry-run")
	assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
}

func TestRunLine(t *testing.T) {
	end := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		rep  serve.RunReport
		want []string
	}{
		{name: "nothing", rep: serve.RunReport{}, want: []string{"2026-01-02T03:04:05Z reconcile run took 1.5s: nothing to do; next run by 2026-01-02T03:04:35Z"}},
		{name: "counts", rep: serve.RunReport{Summary: reconcile.Summary{
			Counts: map[reconcile.Outcome]int{reconcile.Done: 1, reconcile.Failed: 1},
			Items:  []reconcile.Item{{Outcome: reconcile.Done}, {Outcome: reconcile.Failed}},
		}}, want: []string{"took 1.5s: 2 records: 1 done, 1 failed; next run by"}},
		{name: "list failed", rep: serve.RunReport{Err: errors.New("connection refused")}, want: []string{"cannot list the pending records: connection refused"}},
		{name: "list failed after steps", rep: serve.RunReport{Err: errors.New("connection refused"), Summary: reconcile.Summary{
			Counts: map[reconcile.Outcome]int{reconcile.Done: 1},
			Items:  []reconcile.Item{{Outcome: reconcile.Done}},
		}}, want: []string{"took 1.5s: 1 record: 1 done; the list of the records failed before its end (the records of the namespaces read before it were reconciled; the next run lists the others): connection refused; next run by"}},
		{name: "interrupted", rep: serve.RunReport{Err: context.Canceled}, want: []string{"nothing to do; interrupted: the shutdown grace period ran out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.rep.Start, tc.rep.End, tc.rep.Next = end.Add(-1500*time.Millisecond), end, end.Add(30*time.Second)
			line := RunLine(tc.rep)
			for _, w := range tc.want {
				assert.Assert(t, is.Contains(line, w))
			}
		})
	}
}
