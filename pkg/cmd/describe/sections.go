package describe

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// describeWork writes the work under way on a record: the call in flight, the retry,
// the orphan mitigation, then the conditions. withBindingID names the binding id the
// call is for; d is who drives the record; ts prints a point in time.
func describeWork(b *strings.Builder, st *v1alpha1.OperationStatus, withBindingID bool, d driver, ts func(time.Time) string, now time.Time) {
	ago := func(t time.Time) string { return duration.HumanDuration(now.Sub(t)) + " ago" }
	if op := st.InFlight; op != nil {
		b.WriteString("Operation in flight:\n")
		if withBindingID {
			fmt.Fprintf(b, "  %s of binding id %s since %s (%s)\n", op.Type, op.BindingID, ts(op.StartedAt.Time), ago(op.StartedAt.Time))
		} else {
			fmt.Fprintf(b, "  %s since %s (%s)\n", op.Type, ts(op.StartedAt.Time), ago(op.StartedAt.Time))
		}
		if op.Async {
			fmt.Fprintf(b, "  asynchronous, operation %q\n", op.OperationKey)
		} else {
			b.WriteString("  request sent or about to be; it is re-sent identically if interrupted\n")
		}
		if op.LastDescription != "" {
			fmt.Fprintf(b, "  progress: %s\n", op.LastDescription)
		}
		if op.NextPollAt != nil {
			fmt.Fprintf(b, "  next poll: %s\n", nextPoll(op.NextPollAt.Time, d, ts, now))
		}
		if op.PollDeadline != nil {
			fmt.Fprintf(b, "  gives up at: %s\n", ts(op.PollDeadline.Time))
		}
	}
	if r := st.Retry; r != nil {
		b.WriteString("Retry:\n")
		fmt.Fprintf(b, "  attempts: %d\n  reason: %s\n", r.Attempts, r.Reason)
		if r.LastError != "" {
			fmt.Fprintf(b, "  last error: %s\n", r.LastError)
		}
		if r.NextRetryAt != nil {
			fmt.Fprintf(b, "  next retry: %s\n", ts(r.NextRetryAt.Time))
		}
	}
	if line := brokerMayWork(st, withBindingID, ts, now); line != "" {
		fmt.Fprintf(b, "Waiting for the broker:\n  %s\n", line)
	}
	if om := st.OrphanMitigation; om != nil {
		fmt.Fprintf(b, "Orphan mitigation:\n  %s: %s (since %s)\n", om.Reason, om.Message, ts(om.StartedAt.Time))
	}
	if len(st.Conditions) > 0 {
		b.WriteString("Conditions:\n")
		t := printers.NewTable(b, "  TYPE", "STATUS", "REASON", "AGE", "MESSAGE")
		for _, c := range st.Conditions {
			t.Append("  "+c.Type, string(c.Status), c.Reason, duration.HumanDuration(now.Sub(c.LastTransitionTime.Time)), c.Message)
		}
		_ = t.Render()
	}
}

// describeBound writes what the broker answered a binding's bind with, besides the
// credentials.
func describeBound(out *strings.Builder, b *v1alpha1.ServiceBinding, ts func(time.Time) string, now time.Time) {
	bs := b.Status.Bound
	if bs == nil {
		return
	}
	out.WriteString("Bound:\n")
	fmt.Fprintf(out, "  binding id: %s\n", bs.BindingID)
	for _, ep := range bs.Endpoints {
		proto := ep.Protocol
		if proto == "" {
			proto = "tcp"
		}
		fmt.Fprintf(out, "  endpoint: %s ports %s (%s)\n", ep.Host, strings.Join(ep.Ports, ","), proto)
	}
	if bs.SyslogDrain {
		out.WriteString("  syslog drain: URL in Secret key syslog_drain_url\n")
	}
	if bs.RouteService {
		out.WriteString("  route service: URL in Secret key route_service_url\n")
	}
	for _, vm := range bs.VolumeMounts {
		fmt.Fprintf(out, "  volume mount: %s (%s, %s, driver %s, volume %s)\n", vm.ContainerDir, vm.Mode, vm.DeviceType, vm.Driver, vm.Device.VolumeID)
	}
	if bs.ExpiresAt != nil {
		fmt.Fprintf(out, "  expires at: %s\n", ts(bs.ExpiresAt.Time))
	}
	if bs.RenewBefore != nil {
		due := ""
		if records.RotationDue(b, now) {
			due = fmt.Sprintf(` (rotation due: run "kubectl catalog bind --rotate %s")`, b.Name)
		}
		fmt.Fprintf(out, "  renew before: %s%s\n", ts(bs.RenewBefore.Time), due)
	}
}

// brokerMayWork says, when a request of the record got no recorded answer (its sender
// stopped waiting: interrupted twice, killed, timed out), that the broker may still be
// working on it and until when nothing is sent for the record: the grace
// (engine.DefaultMitigationGrace) from the send, or the time the record holds. Each
// driver also times the grace from its own first sight of the send, so this is the
// earliest time. Empty when there is none, or it is over.
func brokerMayWork(st *v1alpha1.OperationStatus, binding bool, ts func(time.Time) string, now time.Time) string {
	op := st.InFlight
	var sent, until time.Time
	if op != nil && !op.Async && op.SentAt != nil {
		sent, until = op.SentAt.Time, op.SentAt.Add(engine.DefaultMitigationGrace)
	}
	if r := st.Retry; r != nil && r.BrokerMayWorkUntil != nil && r.BrokerMayWorkUntil.After(until) {
		until = r.BrokerMayWorkUntil.Time
		if sent.IsZero() && op != nil {
			sent = op.StartedAt.Time
		}
	}
	if until.IsZero() || !now.Before(until) {
		return ""
	}
	what := "request"
	if op != nil {
		what = string(op.Type)
	}
	kind := "instance"
	if binding {
		kind = "binding"
	}
	sentAt := ""
	if !sent.IsZero() {
		sentAt = " sent at " + ts(sent)
	}
	return fmt.Sprintf("the broker may still be working on the %s%s; nothing is sent for this %s until %s, unless its sender records the answer first", what, sentAt, kind, ts(until))
}

// driver is who drives a record, as describe shows it: the record's namespace, and the
// claim on it when one is shown live (Lease.Shown), nil otherwise.
type driver struct {
	namespace string
	claim     *records.Lease
}

// driverOf is the driver of obj: its namespace and its live claim, if any.
func driverOf(obj metav1.Object, now time.Time) driver {
	d := driver{namespace: obj.GetNamespace()}
	if l, ok := records.LeaseOf(obj); ok && l.Live(now) {
		d.claim = &l
	}
	return d
}

// nextPoll is the time of an operation's next poll as describe shows it, saying, once it
// has passed, who polls. A driver polling under the record's claim writes the record
// only when the broker's description changes, when it renews its claim, and with the
// outcome (docs/engine.md, "Polls that write nothing"), so the time stored is the last
// one written and may be past while the driver polls on its own schedule. Without a
// live claim, the poll is due and the next reconcile makes it; a claim whose process is
// seen to have ended (on this host) is taken over at once by a reconcile of this host.
func nextPoll(at time.Time, d driver, ts func(time.Time) string, now time.Time) string {
	if now.Before(at) {
		return ts(at)
	}
	run := hint.Quoted(d.namespace, "reconcile")
	switch l := d.claim; {
	case l != nil && l.Abandoned():
		return fmt.Sprintf("%s (past: due; the claim of %s, whose process has ended, runs until %s: %s run on this host takes it over and polls it at once, elsewhere once the claim runs out)",
			ts(at), l.Holder, ts(l.ExpiresAt), run)
	case l != nil:
		return fmt.Sprintf("%s (past: %s is polling it; its claim runs until %s)", ts(at), l.Holder, ts(l.ExpiresAt))
	}
	return fmt.Sprintf("%s (past: due, and no one holds the record's claim: the next run of reconcile polls it, the installed one (a --serve Deployment within seconds, a CronJob at its next run) or %s run now)", ts(at), run)
}
