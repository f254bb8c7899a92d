// Package lifecycle holds what the lifecycle verbs (provision, update, deprovision,
// touch, share, bind, unbind, register, deregister) share with each other and with
// "apply -f": their options (VerbOptions: wait, --dry-run, -o and the clients;
// parameters, limits, credentials, a broker's registration), the instance argument, the
// runs of unbind, deprovision and deregister (confirmation, progress, outcome), and
// showing what an engine operation does (its progress and notes) and its outcome.
package lifecycle

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// WaitFlags are --wait, --timeout and --interval.
type WaitFlags struct {
	Wait     bool
	Timeout  time.Duration
	Interval time.Duration
}

// AddFlags adds the wait flags.
func (w *WaitFlags) AddFlags(fs *pflag.FlagSet, what string) {
	fs.BoolVar(&w.Wait, "wait", false, "Wait until the "+what+" is finished at the broker, showing progress.")
	w.Timeout = 5 * time.Minute
	fs.Var((*cmdutil.WaitTimeout)(&w.Timeout), "timeout", "How long --wait waits, e.g. 10m; 0 or -1 waits without limit. An answer of the broker that came in time is recorded first; the operation goes on after a timeout.")
	fs.DurationVar(&w.Interval, "interval", 2*time.Second, "Shortest interval between polls of the broker when it sends no Retry-After.")
}

// Validate checks the wait flags.
func (w *WaitFlags) Validate() error {
	if w.Interval <= 0 {
		return cmdutil.UsageErrorf("--interval must be positive, not %s", w.Interval)
	}
	return nil
}

// Follow is how an engine operation follows its record for these flags, reporting to p
// (nil: no progress).
func (w WaitFlags) Follow(p *Progress) engine.Follow {
	f := engine.Follow{Wait: w.Wait, Timeout: w.Timeout}
	if p != nil {
		f.Progress = p.Show
		f.Note = func(line string) { fmt.Fprintln(p.w, iostreams.SafeText(line)) }
	}
	return f
}

// Progress prints what the engine reports while it drives a record (an instance or a
// binding): a live line on a terminal, a line per change otherwise.
type Progress struct {
	w     io.Writer
	live  bool
	start time.Time
	last  string
	width int
}

// NewProgress reports to streams' error output, live when its output is a terminal.
func NewProgress(streams cmdutil.IOStreams) *Progress {
	return &Progress{w: streams.ErrOut, live: streams.OutTerminal, start: time.Now()}
}

// Show reports one result; it is a engine.DriveOptions.Progress.
func (p *Progress) Show(r engine.Result) {
	msg := iostreams.SafeLine(r.Message)
	switch {
	case engine.WaitingForReconcile(r.Instance), engine.WaitingForReconcile(r.Binding):
		// The phase is where the record stood (a binding being rotated is still
		// Ready with its old credentials): what is to come waits for reconcile.
		msg = "Waiting for reconcile: " + msg
	case r.Instance != nil && r.Instance.Status.Phase != "":
		msg = string(r.Instance.Status.Phase) + ": " + msg
	case r.Binding != nil && r.Binding.Status.Phase != "":
		msg = string(r.Binding.Status.Phase) + ": " + msg
	}
	elapsed := time.Since(p.start).Round(time.Second)
	if p.live {
		line := fmt.Sprintf("%s (%s)", msg, elapsed)
		pad := ""
		if n := p.width - len(line); n > 0 {
			pad = strings.Repeat(" ", n)
		}
		fmt.Fprintf(p.w, "\r%s%s", line, pad)
		p.width = len(line)
		return
	}
	if msg != p.last {
		fmt.Fprintf(p.w, "%s (%s)\n", msg, elapsed)
		p.last = msg
	}
}

// Done ends a live line.
func (p *Progress) Done() {
	if p.live && p.width > 0 {
		fmt.Fprintln(p.w)
	}
}

// BrokerNamespace is where an instance's broker and class records live.
func BrokerNamespace(inst *v1alpha1.ServiceInstance, catalogNamespace string) string {
	if inst.Spec.Scope == v1alpha1.ScopeCluster {
		return catalogNamespace
	}
	return inst.Namespace
}

// ParseSecretRefs parses --params-from-secret values, SECRET or SECRET/KEY.
func ParseSecretRefs(values []string) ([]v1alpha1.ParametersFromSource, error) {
	var out []v1alpha1.ParametersFromSource
	for _, v := range values {
		name, key, _ := strings.Cut(v, "/")
		if n, k, ok := strings.Cut(strings.TrimSuffix(v, "]"), "["); ok && strings.HasSuffix(v, "]") && !strings.Contains(v, "/") {
			name, key = n, k // svcat's SECRET[KEY]
		}
		if name == "" {
			return nil, cmdutil.UsageErrorf("--params-from-secret %q: use SECRET or SECRET/KEY", v)
		}
		out = append(out, v1alpha1.ParametersFromSource{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: name, Key: key}})
	}
	return out, nil
}

// ExactlyOneName accepts exactly one argument, the instance's name; anything else is a
// usage error (exit code 2), as unknown flags are.
func ExactlyOneName(cmd *cobra.Command, args []string) error {
	switch len(args) {
	case 1:
		if args[0] == "" {
			return cmdutil.UsageErrorf("the instance name must not be empty: see %q", cmd.CommandPath()+" --help")
		}
		if p := records.NameProblem(v1alpha1.KindServiceInstance, args[0]); p != "" {
			return cmdutil.UsageErrorf("%q is not a valid instance name: %s", args[0], p)
		}
		return nil
	case 0:
		return cmdutil.UsageErrorf("%s needs the instance's NAME: see %q", cmd.CommandPath(), cmd.CommandPath()+" --help")
	default:
		return cmdutil.UsageErrorf("%s takes one NAME, got %d arguments (%s): see %q", cmd.CommandPath(), len(args), strings.Join(args, " "), cmd.CommandPath()+" --help")
	}
}
