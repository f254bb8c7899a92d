// Package doctor implements "kubectl catalog doctor".
package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/catalogcmd"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

var doctorLong = cmdutil.LongDesc(`
	Check that kubectl catalog can work here, and find what is stuck.

	doctor checks, in order:

	  - kubeconfig (shown only when it fails): the kubeconfig, --context and
	    the other connection flags can be loaded;
	  - cluster: the API server answers, and who you are to it;
	  - rbac: whether you may do what "kubectl catalog reconcile" does, in the
	    current namespace and in the catalog namespace, and what each denied
	    permission breaks;
	  - broker: every broker registered in the catalog namespace and in the
	    current namespace answers its catalog within --broker-timeout, with the
	    credentials it is registered with;
	  - record: records with pending work that are stuck: failed three times
	    or more, failed for good, or deleted more than ten minutes ago and
	    still there; namespace: namespaces stuck Terminating because they
	    hold records that only reconcile can finish (a namespace-scoped
	    broker among them is kept until its instances are deprovisioned,
	    and doctor names them);
	  - reconcile: whether "kubectl catalog reconcile install" is in place in
	    --reconcile-namespace: each of its CronJobs (one per shard), when it
	    last ran and last succeeded, and each Deployment of --serve, how many
	    of its replicas are ready (--reconcile-name: one installation only);
	  - shard group: the members of each group of "reconcile --serve
	    --shard-group" (their Leases in the catalog namespace: holder, last
	    renewal, live or expired), with a warning for expired or malformed
	    Leases, or a single live member where the Deployment asks for more;
	  - trust: whether the records' trust policy is in force (the
	    ValidatingAdmissionPolicy and its binding, and a token ConfigMap in
	    the catalog namespace younger than both), not installed, or with a
	    stale token. Without it every record has an unverified author, and
	    reconcile refuses what needs its author's authority.

	Each check is OK, WARN or FAIL; the ones that are not OK say how to fix
	them. doctor changes nothing. It exits 1 when a check failed, 0 otherwise
	(warnings included).`)

var doctorExample = cmdutil.Examples(`
	# Check the current namespace and the catalog namespace
	kubectl catalog doctor

	# Another namespace, with a shorter timeout for the brokers
	kubectl catalog doctor -n dev --broker-timeout 3s

	# For a script or a monitoring job
	kubectl catalog doctor -o json`)

// Status is the outcome of one check.
type Status string

// Statuses of checks.
const (
	OK   Status = "OK"
	Warn Status = "WARN"
	Fail Status = "FAIL"
)

// Check is one line of the report.
type Check struct {
	// Name says what was checked, such as "broker catalog-system/acme".
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	// Fix says what to do when the status is not OK.
	Fix string `json:"fix,omitempty"`
}

// Report is every check, in order.
type Report struct {
	Checks []Check `json:"checks"`
}

// Failed reports whether a check failed.
func (r Report) Failed() bool {
	return slices.ContainsFunc(r.Checks, func(c Check) bool { return c.Status == Fail })
}

func (r *Report) add(c Check) { r.Checks = append(r.Checks, c) }

// Thresholds of the record checks.
const (
	// StuckAttempts is how many failed attempts make a record worth a look.
	StuckAttempts = 3
	// StuckDeletion is how long a deletion may wait before it is reported.
	StuckDeletion = 10 * time.Minute
)

// Options are the options of doctor.
type Options struct {
	BrokerTimeout      time.Duration
	Output             string
	ReconcileNamespace string
	ReconcileName      string

	Namespace        string
	CatalogNamespace string
	Server           string
	// ConfigErr is why the kubeconfig (or --context, --cluster, ...) could not be
	// loaded; Diagnose then reports it as the failing check, and nothing else.
	ConfigErr error
	// Explain tells a connection error with the server and context (nil: as it is).
	Explain func(error) error
	Core    kubernetes.Interface
	Store   *store.Store
	Clients *brokerclient.Factory
	// CheckBroker refuses a broker record the engine would not call in its author's name
	// (docs/security.md): doctor, run by someone with more rights than whoever wrote the
	// record, must not send credentials the author may not read to a URL of their choosing.
	// Nil checks nothing.
	CheckBroker func(ctx context.Context, b *v1alpha1.Broker) error
	Now         func() time.Time
	Streams     cmdutil.IOStreams
}

// NewCmdDoctor returns the doctor command.
func NewCmdDoctor(f *cmdutil.Factory) *cobra.Command {
	o := &Options{Streams: f.IOStreams, ReconcileNamespace: install.DefaultNamespace}
	cmd := &cobra.Command{
		Use:               "doctor",
		Short:             "Check the cluster, permissions, brokers and stuck records",
		Long:              doctorLong,
		Example:           doctorExample,
		Args:              cmdutil.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(f); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.DurationVar(&o.BrokerTimeout, "broker-timeout", 10*time.Second, "How long to wait for each broker's catalog.")
	fs.StringVarP(&o.Output, "output", "o", "", "Output format. One of: (json, yaml); default a table.")
	fs.StringVar(&o.ReconcileNamespace, "reconcile-namespace", o.ReconcileNamespace, `Namespace of the "reconcile install" CronJobs and Deployments; doctor checks every one there.`)
	fs.StringVar(&o.ReconcileName, "reconcile-name", o.ReconcileName, `Check only the "reconcile install" installation of this --name (its CronJob per shard, or its Deployment), or the one CronJob or Deployment of this name.`)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Validate checks the flags without I/O.
func (o *Options) Validate() error {
	if o.BrokerTimeout <= 0 {
		return cmdutil.UsageErrorf("--broker-timeout must be positive, not %s", o.BrokerTimeout)
	}
	switch o.Output {
	case "", "json", "yaml":
	default:
		return cmdutil.UsageErrorf("--output %q: use json or yaml (default: a table)", o.Output)
	}
	if o.ReconcileNamespace == "" {
		return cmdutil.UsageErrorf("--reconcile-namespace must not be empty")
	}
	return nil
}

// Complete builds the clients.
// A kubeconfig that cannot be loaded is no error here: it is the check that fails.
func (o *Options) Complete(f *cmdutil.Factory) error {
	o.CatalogNamespace, o.Now, o.Explain = f.CatalogNamespace, f.Now, f.ExplainClusterError
	ns, _, err := f.Namespace()
	if err != nil {
		o.ConfigErr = err
		return nil
	}
	cfg, err := f.RESTConfig()
	if err != nil {
		o.ConfigErr = err
		return nil
	}
	core, err := f.KubernetesClient()
	if err != nil {
		return err
	}
	st, err := f.Store()
	if err != nil {
		return err
	}
	o.Namespace, o.CatalogNamespace, o.Server, o.Core, o.Store, o.Now = ns, f.CatalogNamespace, cfg.Host, core, st, f.Now
	if o.Clients, err = f.BrokerClients(o.BrokerTimeout); err != nil {
		return err
	}
	eng, err := f.Engine(cmdutil.EngineOptions{})
	if err != nil {
		return err
	}
	o.CheckBroker = eng.CheckBroker
	return nil
}

// Run checks and prints the report; it fails (silently: the report says
// why) when a check failed.
func (o *Options) Run(ctx context.Context) error {
	r := o.Diagnose(ctx)
	if err := Print(o.Streams, o.Output, r); err != nil {
		return err
	}
	if r.Failed() {
		return &cmdutil.SilentError{Code: cmdutil.ExitError}
	}
	return nil
}

// Diagnose runs the checks. When the cluster cannot be reached, the other
// checks are not attempted.
func (o *Options) Diagnose(ctx context.Context) Report {
	if o.Now == nil {
		o.Now = time.Now
	}
	var r Report
	if o.ConfigErr != nil {
		r.add(Check{Name: "kubeconfig", Status: Fail, Detail: strings.TrimSuffix(o.ConfigErr.Error(), "; "+cmdutil.DoctorHint),
			Fix: "check the kubeconfig (kubectl config view), the contexts it has (kubectl config get-contexts) and the --kubeconfig/--context flags"})
		return r
	}
	if !o.checkCluster(ctx, &r) {
		return r
	}
	o.checkRBAC(ctx, &r)
	o.checkBrokers(ctx, &r)
	o.checkRecords(ctx, &r)
	o.checkReconcileInstalled(ctx, &r)
	o.checkShardGroups(ctx, &r)
	o.checkTrust(ctx, &r)
	return r
}

// checkShardGroups shows the members of each shard group of "reconcile --serve
// --shard-group" (their Leases in the catalog namespace), with a warning when a group
// has expired or malformed Leases, or a single live member while its Deployment asks
// for more replicas. Without Leases, nor a Deployment of a group, it says nothing.
func (o *Options) checkShardGroups(ctx context.Context, r *Report) {
	list, err := o.Core.CoordinationV1().Leases(o.CatalogNamespace).List(ctx, metav1.ListOptions{LabelSelector: reconcile.LabelShardGroup})
	if err != nil {
		return // not ours to see: doctor's rbac check says what the user may do
	}
	byGroup := map[string][]coordinationv1.Lease{}
	for _, l := range list.Items {
		g := l.Labels[reconcile.LabelShardGroup]
		byGroup[g] = append(byGroup[g], l)
	}
	// The replicas each group's Deployment asks for, where doctor may see them.
	want := map[string]int32{}
	wantRef := map[string]string{}
	if ds, err := o.Core.AppsV1().Deployments(o.ReconcileNamespace).List(ctx, metav1.ListOptions{LabelSelector: install.LabelComponent + "=reconcile"}); err == nil {
		for _, d := range ds.Items {
			for _, c := range d.Spec.Template.Spec.Containers {
				if i := slices.Index(c.Command, "--shard-group"); i >= 0 && i+1 < len(c.Command) {
					want[c.Command[i+1]] = ptrValue(d.Spec.Replicas)
					wantRef[c.Command[i+1]] = "Deployment " + d.Namespace + "/" + d.Name
				}
			}
		}
	}
	names := make([]string, 0, len(byGroup))
	for g := range byGroup {
		names = append(names, g)
	}
	for g := range want {
		if _, ok := byGroup[g]; !ok {
			names = append(names, g)
		}
	}
	sort.Strings(names)
	now := o.Now()
	for _, g := range names {
		members := reconcile.MembersOf(g, byGroup[g], now)
		var lines []string
		live, expired, malformed := 0, 0, 0
		for _, m := range members {
			state := "live"
			switch {
			case m.Malformed != "":
				state, malformed = "ignored: "+m.Malformed, malformed+1
			case !m.Live:
				state, expired = "expired", expired+1
			default:
				live++
			}
			renewed := "never renewed"
			if !m.RenewTime.IsZero() {
				renewed = "renewed " + now.Sub(m.RenewTime).Round(time.Second).String() + " ago"
			}
			lines = append(lines, fmt.Sprintf("%s (holder %s, %s, %s)", m.Lease, cmpOr(m.ID, "none"), renewed, state))
		}
		c := Check{Name: "shard group " + g, Status: OK,
			Detail: fmt.Sprintf("%d live members in namespace %s: %s", live, o.CatalogNamespace, strings.Join(lines, "; "))}
		if len(members) == 0 {
			c.Detail = fmt.Sprintf("no member: no Lease in namespace %s", o.CatalogNamespace)
		}
		var fixes []string
		if expired > 0 || malformed > 0 {
			c.Status = Warn
			fixes = append(fixes, fmt.Sprintf("expired Leases are members that stopped without deleting theirs (a killed pod); the live members took over their records and delete them %s after they expired (or: kubectl delete lease -n %s NAME). Malformed ones are ignored: find out who wrote them",
				reconcile.StaleLeaseAfter(reconcile.DefaultLeaseDuration), o.CatalogNamespace))
		}
		if n, ok := want[g]; ok && n > 1 && live <= 1 {
			c.Status = Warn
			c.Detail += fmt.Sprintf("; %s asks for %d replicas", wantRef[g], n)
			fixes = append(fixes, fmt.Sprintf("only %d live member: see the pods, kubectl get pods -n %s -l %s=reconcile, and their logs", live, o.ReconcileNamespace, install.LabelComponent))
		}
		c.Fix = strings.Join(fixes, "; ")
		r.add(c)
	}
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// checkTrust reports whether the records' trust policy is in force.
func (o *Options) checkTrust(ctx context.Context, r *Report) {
	const name = "trust"
	st, err := trust.CheckPolicy(ctx, o.Core, o.CatalogNamespace)
	switch {
	case err != nil:
		r.add(Check{Name: name, Status: Warn, Detail: fmt.Sprintf("cannot tell whether the records' trust policy is in force: %v", err),
			Fix: fmt.Sprintf("kubectl get validatingadmissionpolicy,validatingadmissionpolicybinding %s; kubectl get configmap %s -n %s", store.TrustPolicyName, store.TrustConfigMap, o.CatalogNamespace)})
	case st.InForce():
		detail := fmt.Sprintf("in force: ValidatingAdmissionPolicy %s and its binding, token ConfigMap %s/%s", store.TrustPolicyName, o.CatalogNamespace, store.TrustConfigMap)
		if st.TokenOnly {
			detail = fmt.Sprintf("in force as far as the token ConfigMap %s/%s tells (you may not read the policy or its binding)", o.CatalogNamespace, store.TrustConfigMap)
		}
		r.add(Check{Name: name, Status: OK, Detail: detail})
	default:
		r.add(Check{Name: name, Status: Warn, Detail: "not in force: " + st.Reason + "; every record has an unverified author, and reconcile refuses what needs its author's authority",
			Fix: "kubectl catalog reconcile install --image IMAGE (installs the policy and writes a new token; needs the ValidatingAdmissionPolicy API, Kubernetes 1.30+); records written before then are verified once their author writes them again with kubectl catalog"})
	}
}

// namespaces are the current and the catalog namespace, once each.
func (o *Options) namespaces() []string {
	if o.Namespace == o.CatalogNamespace || o.Namespace == "" {
		return []string{o.CatalogNamespace}
	}
	return []string{o.Namespace, o.CatalogNamespace}
}

func (o *Options) checkCluster(ctx context.Context, r *Report) bool {
	v, err := o.Core.Discovery().ServerVersion()
	if err != nil {
		detail := fmt.Sprintf("cannot reach the API server %s: %v", o.Server, err)
		if o.Explain != nil {
			var ce *cmdutil.ClusterError
			if errors.As(o.Explain(err), &ce) {
				ce.Context = ""
				detail = strings.TrimSuffix(ce.Error(), "; "+cmdutil.DoctorHint)
			}
		}
		r.add(Check{Name: "cluster", Status: Fail, Detail: detail,
			Fix: "check the kubeconfig's current context (kubectl config current-context) and that the cluster is up (kubectl version)"})
		return false
	}
	detail := "Kubernetes " + v.GitVersion
	if o.Server != "" {
		detail += " at " + o.Server
	}
	r.add(Check{Name: "cluster", Status: OK, Detail: detail})

	ssr, err := o.Core.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		r.add(Check{Name: "identity", Status: Warn, Detail: fmt.Sprintf("cannot tell who you are (SelfSubjectReview): %v", err),
			Fix: "brokers receive no originating identity; allow create on selfsubjectreviews.authentication.k8s.io (Kubernetes 1.28 and later allow it to everyone by default)"})
		return true
	}
	u := ssr.Status.UserInfo
	detail = "user " + u.Username
	if len(u.Groups) > 0 {
		detail += " (groups " + strings.Join(u.Groups, ", ") + ")"
	}
	r.add(Check{Name: "identity", Status: OK, Detail: detail})
	return true
}

// checkRBAC asks, for each namespace, whether the user may make each
// request of install.Permissions.
func (o *Options) checkRBAC(ctx context.Context, r *Report) {
	for _, ns := range o.namespaces() {
		var denied []string
		var breaks []string
		severe := false
		var errs []string
		for _, p := range install.Permissions {
			var missing []string
			for _, group := range p.APIGroups {
				for _, res := range p.Resources {
					for _, verb := range p.Verbs {
						attrs := &authzv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: res}
						switch res {
						case "namespaces":
							attrs.Name = ns
						case "selfsubjectreviews", "subjectaccessreviews", "validatingadmissionpolicies", "validatingadmissionpolicybindings":
							attrs.Namespace = ""
						}
						if len(p.ResourceNames) > 0 {
							attrs.Name = p.ResourceNames[0]
						}
						ok, err := o.allowed(ctx, attrs)
						if err != nil {
							errs = append(errs, err.Error())
							continue
						}
						if !ok {
							missing = append(missing, verb+" "+qualified(res, group))
						}
					}
				}
			}
			if len(missing) > 0 {
				denied = append(denied, missing...)
				breaks = append(breaks, p.Why)
				if slices.Contains(p.Resources, "configmaps") {
					severe = true
				}
			}
		}
		name := "rbac " + ns
		switch {
		case len(errs) > 0 && len(denied) == 0:
			r.add(Check{Name: name, Status: Warn, Detail: "cannot check permissions: " + errs[0],
				Fix: "ask an administrator whether SelfSubjectAccessReviews are allowed"})
		case len(denied) == 0:
			r.add(Check{Name: name, Status: OK, Detail: "you may do everything reconcile does here"})
		default:
			status := Warn
			if severe {
				status = Fail
			}
			r.add(Check{Name: name, Status: status,
				Detail: "denied: " + strings.Join(denied, ", ") + "; so: " + strings.Join(slices.Compact(breaks), "; "),
				Fix:    fmt.Sprintf("ask an administrator for these permissions in namespace %q, or let reconcile run in the cluster with its own (kubectl catalog reconcile install --dry-run=client -o yaml shows the role)", ns)})
		}
	}
}

func qualified(resource, group string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

func (o *Options) allowed(ctx context.Context, attrs *authzv1.ResourceAttributes) (bool, error) {
	sar, err := o.Core.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
		Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}

func (o *Options) checkBrokers(ctx context.Context, r *Report) {
	var brokers []*v1alpha1.Broker
	for _, ns := range o.namespaces() {
		list, err := o.Store.Brokers().List(ctx, ns, store.Filter{})
		if err != nil {
			r.add(Check{Name: "brokers " + ns, Status: Warn, Detail: fmt.Sprintf("cannot list brokers: %v", err),
				Fix: fmt.Sprintf("ask for list permission on ConfigMaps in namespace %q", ns)})
			continue
		}
		brokers = append(brokers, list...)
	}
	if len(brokers) == 0 {
		r.add(Check{Name: "brokers", Status: Warn, Detail: fmt.Sprintf("no broker registered in namespace %s", strings.Join(o.namespaces(), " or ")),
			Fix: "register one: kubectl catalog register NAME --url URL"})
		return
	}
	for _, b := range brokers {
		r.add(o.checkBroker(ctx, b))
	}
}

func (o *Options) checkBroker(ctx context.Context, b *v1alpha1.Broker) Check {
	c := Check{Name: "broker " + b.Namespace + "/" + b.Name}
	ctx, cancel := context.WithTimeout(ctx, o.BrokerTimeout)
	defer cancel()
	if o.CheckBroker != nil {
		if err := o.CheckBroker(ctx, b); err != nil {
			c.Status = Fail
			c.Detail = "not called: " + err.Error()
			if r, ok := catalog.AsRefused(err); ok {
				c.Detail = fmt.Sprintf("refused: %s: %s", r.Reason, oneLine(r.Message))
				if r.Reason == catalog.ReasonRefusedAuthorUnverified {
					// Not a forgery as far as anyone can tell: nobody can tell.
					c.Status = Warn
					c.Fix = fmt.Sprintf(`not called, since its author cannot be verified: install the trust policy ("kubectl catalog reconcile install"), or check it yourself with "kubectl catalog sync broker %s -n %s"`, b.Name, b.Namespace)
					return c
				}
			}
			c.Fix = fmt.Sprintf("nothing is sent to this broker: its owner fixes what it names or registers it again with kubectl catalog, or it is deleted (kubectl catalog describe broker %s -n %s; docs/security.md)", b.Name, b.Namespace)
			return c
		}
	}
	client, err := o.Clients.ClientFor(ctx, b)
	if err == nil {
		resp, cerr := client.GetCatalog(ctx, nil)
		if cerr == nil {
			c.Status = OK
			c.Detail = fmt.Sprintf("%s answers: %d services", b.Spec.URL, len(resp.Services))
			if b.Spec.Auth != nil {
				c.Detail += ", authenticated (" + string(b.Spec.Auth.Type) + ")"
			}
			return c
		}
		err = cerr
	}
	c.Status = Fail
	c.Detail = fmt.Sprintf("%s: %v", b.Spec.URL, err)
	scope := ""
	if b.Namespace != o.CatalogNamespace {
		scope = " --scope namespace -n " + b.Namespace
	}
	c.Fix = fmt.Sprintf("check the broker's URL, TLS settings and credentials Secret (kubectl catalog describe broker %s), then: kubectl catalog sync broker %s%s", b.Name, b.Name, scope)
	return c
}

// record is what checkRecords needs of any record.
type record struct {
	kind, namespace, name string
	deleted               *metav1.Time
	retry                 *v1alpha1.RetryState
	conditions            []metav1.Condition
	broker                *v1alpha1.Broker
}

func (o *Options) readRecord(ctx context.Context, it store.WorkItem) (record, error) {
	rec := record{kind: it.Kind, namespace: it.Namespace, name: it.Name}
	switch it.Kind {
	case v1alpha1.KindServiceInstance:
		x, err := o.Store.Instances().Get(ctx, it.Namespace, it.Name)
		if err != nil {
			return rec, err
		}
		rec.deleted, rec.retry, rec.conditions = x.DeletionTimestamp, x.Status.Retry, x.Status.Conditions
	case v1alpha1.KindServiceBinding:
		x, err := o.Store.Bindings().Get(ctx, it.Namespace, it.Name)
		if err != nil {
			return rec, err
		}
		rec.deleted, rec.retry, rec.conditions = x.DeletionTimestamp, x.Status.Retry, x.Status.Conditions
	case v1alpha1.KindBroker:
		x, err := o.Store.Brokers().Get(ctx, it.Namespace, it.Name)
		if err != nil {
			return rec, err
		}
		rec.deleted, rec.retry, rec.conditions, rec.broker = x.DeletionTimestamp, x.Status.Retry, x.Status.Conditions, x
	}
	return rec, nil
}

// noun is how a record kind is named on the command line.
func noun(kind string) string {
	switch kind {
	case v1alpha1.KindServiceInstance:
		return "instance"
	case v1alpha1.KindServiceBinding:
		return "binding"
	case v1alpha1.KindBroker:
		return "broker"
	}
	return strings.ToLower(kind)
}

func (o *Options) checkRecords(ctx context.Context, r *Report) {
	scope := "all namespaces"
	items, err := o.Store.ListPending(ctx, "")
	if store.IsForbidden(err) || apierrors.IsForbidden(err) {
		scope = "namespace " + o.Namespace
		items, err = o.Store.ListPending(ctx, o.Namespace)
	}
	if err != nil {
		r.add(Check{Name: "records", Status: Warn, Detail: fmt.Sprintf("cannot list the pending records: %v", err),
			Fix: "ask for list permission on ConfigMaps"})
		return
	}
	now := o.Now()
	stuck := 0
	deleting := map[string]int{}
	kept := map[string][]string{} // namespace -> why its brokers being deleted are kept
	for _, it := range items {
		if it.Deleting {
			deleting[it.Namespace]++
		}
		rec, err := o.readRecord(ctx, it)
		if store.IsNotFound(err) {
			continue
		}
		name := "record " + it.Namespace + "/" + noun(it.Kind) + "/" + it.Name
		describe := fmt.Sprintf("kubectl catalog describe %s %s -n %s", noun(it.Kind), it.Name, it.Namespace)
		if err != nil {
			stuck++
			r.add(Check{Name: name, Status: Warn, Detail: fmt.Sprintf("cannot read it: %v", err), Fix: describe})
			continue
		}
		var problems []string
		status := Warn
		fix := describe + "; then kubectl catalog reconcile -n " + it.Namespace
		if f := meta.FindStatusCondition(rec.conditions, v1alpha1.ConditionFailed); f != nil && f.Status == metav1.ConditionTrue && rec.retry == nil {
			status = Fail
			problems = append(problems, fmt.Sprintf("failed for good: %s: %s", f.Reason, oneLine(f.Message)))
			fix = describe + "; change its spec, or delete it"
			if it.Kind == v1alpha1.KindServiceInstance {
				fix = describe + `; change the plan or parameters ("kubectl catalog update"), or deprovision it`
			}
		}
		refused := meta.FindStatusCondition(rec.conditions, v1alpha1.ConditionRefused)
		if refused != nil && refused.Status == metav1.ConditionTrue {
			status = Fail
			problems = append(problems, fmt.Sprintf("refused: %s: %s", refused.Reason, oneLine(refused.Message)))
			fix = describe + "; nothing is sent to a broker for it: its owner fixes what it names or writes it again with kubectl catalog, or it is deleted (docs/security.md)"
		} else if rec.retry != nil && rec.retry.Attempts >= StuckAttempts {
			p := fmt.Sprintf("%d failed attempts, last: %s", rec.retry.Attempts, oneLine(rec.retry.LastError))
			if rec.retry.NextRetryAt != nil {
				p += ", next retry at " + rec.retry.NextRetryAt.UTC().Format(time.RFC3339)
			}
			problems = append(problems, p)
		}
		waitsFor := "the broker"
		if rec.broker != nil && rec.deleted != nil && slices.Contains(rec.broker.Finalizers, store.Finalizer) {
			// A namespace-scoped broker is kept until its instances are deprovisioned.
			insts, err := catalogsync.InstancesOf(ctx, o.Store, rec.broker)
			switch {
			case err != nil:
				waitsFor = fmt.Sprintf("its instances (which cannot be listed: %v)", err)
			case len(insts) > 0:
				waitsFor = "its instances: " + reconcile.KeptForInstances(insts)
				kept[it.Namespace] = append(kept[it.Namespace], fmt.Sprintf("broker %q is %s", it.Name, reconcile.KeptForInstances(insts)))
			default:
				waitsFor = "reconcile to remove its finalizer"
			}
		}
		if rec.deleted != nil && now.Sub(rec.deleted.Time) > StuckDeletion {
			problems = append(problems, fmt.Sprintf("deleted %s ago and still waiting for %s", now.Sub(rec.deleted.Time).Round(time.Minute), waitsFor))
			if it.Kind == v1alpha1.KindServiceInstance {
				fix += fmt.Sprintf(`; if its broker is gone for good: kubectl catalog deprovision %s -n %s --abandon --yes`, it.Name, it.Namespace)
			}
		}
		if len(problems) == 0 {
			continue
		}
		stuck++
		r.add(Check{Name: name, Status: status, Detail: strings.Join(problems, "; "), Fix: fix})
	}
	o.checkTerminating(ctx, r, deleting, kept)
	if stuck == 0 {
		r.add(Check{Name: "records", Status: OK, Detail: fmt.Sprintf("none stuck in %s (%d with pending work)", scope, len(items))})
	}
}

// checkTerminating reports the namespaces being deleted that hold records:
// they stay Terminating until reconcile has finished those records.
// A namespace-scoped broker among them is kept until its instances are deprovisioned
// (kept says which instances).
func (o *Options) checkTerminating(ctx context.Context, r *Report, deleting map[string]int, kept map[string][]string) {
	nss := make([]string, 0, len(deleting))
	for ns := range deleting {
		nss = append(nss, ns)
	}
	sort.Strings(nss)
	for _, ns := range nss {
		n, err := o.Core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil || n.Status.Phase != corev1.NamespaceTerminating {
			continue
		}
		detail := fmt.Sprintf("Terminating, held by %s that reconcile must first delete at the brokers",
			catalogcmd.Plural(deleting[ns], "catalog record", "catalog records"))
		if len(kept[ns]) > 0 {
			detail += "; " + strings.Join(kept[ns], "; ")
		}
		r.add(Check{Name: "namespace " + ns, Status: Warn, Detail: detail,
			Fix: "run kubectl catalog reconcile -n " + ns})
	}
}

// checkReconcileInstalled reports each workload "reconcile install" made in
// --reconcile-namespace (by its labels): every CronJob (one per shard), and every
// Deployment of --serve; only those of the installation or workload --reconcile-name
// when it is set.
func (o *Options) checkReconcileInstalled(ctx context.Context, r *Report) {
	ns := o.ReconcileNamespace
	sel := metav1.ListOptions{LabelSelector: install.WorkloadSelector}
	wanted := func(m metav1.Object) bool {
		if o.ReconcileName == "" || m.GetName() == o.ReconcileName {
			return true
		}
		inst, ok := m.GetLabels()[install.LabelInstallation]
		return ok && inst == o.ReconcileName
	}
	var checks []Check
	var failed []string
	cjs, err := o.Core.BatchV1().CronJobs(ns).List(ctx, sel)
	if err != nil {
		failed = append(failed, fmt.Sprintf("cannot list the CronJobs in namespace %s: %v", ns, err))
	} else {
		sort.Slice(cjs.Items, func(i, j int) bool { return cjs.Items[i].Name < cjs.Items[j].Name })
		for i := range cjs.Items {
			if wanted(&cjs.Items[i]) {
				checks = append(checks, o.cronJobCheck(&cjs.Items[i]))
			}
		}
	}
	ds, err := o.Core.AppsV1().Deployments(ns).List(ctx, sel)
	if err != nil {
		failed = append(failed, fmt.Sprintf("cannot list the Deployments in namespace %s: %v", ns, err))
	} else {
		sort.Slice(ds.Items, func(i, j int) bool { return ds.Items[i].Name < ds.Items[j].Name })
		for i := range ds.Items {
			if wanted(&ds.Items[i]) {
				checks = append(checks, deploymentCheck(&ds.Items[i]))
			}
		}
	}
	if len(failed) > 0 {
		r.add(Check{Name: "reconcile", Status: Warn, Detail: strings.Join(failed, "; "),
			Fix: "ask an administrator whether reconcile runs in the cluster (kubectl get cronjobs,deployments -A -l " + install.LabelComponent + "=reconcile)"})
	}
	for _, c := range checks {
		r.add(c)
	}
	if len(checks) == 0 && len(failed) == 0 {
		what := "of reconcile install in namespace " + ns
		if o.ReconcileName != "" {
			what = fmt.Sprintf("of reconcile install named %s in namespace %s", o.ReconcileName, ns)
		}
		r.add(Check{Name: "reconcile", Status: Warn, Detail: "not installed (no CronJob or Deployment " + what + ")",
			Fix: "run kubectl catalog reconcile -A regularly, or in the cluster: kubectl catalog reconcile install --image IMAGE"})
	}
}

// cronJobCheck reports one CronJob of "reconcile install": its schedule, last run and
// last success.
func (o *Options) cronJobCheck(cj *batchv1.CronJob) Check {
	ref := cj.Namespace + "/" + cj.Name
	now := o.Now()
	ago := func(t *metav1.Time) string {
		if t == nil {
			return "never"
		}
		return now.Sub(t.Time).Round(time.Second).String() + " ago"
	}
	detail := fmt.Sprintf("CronJob %s, schedule %q; last run %s, last success %s", ref, cj.Spec.Schedule, ago(cj.Status.LastScheduleTime), ago(cj.Status.LastSuccessfulTime))
	c := Check{Name: "reconcile " + cj.Name, Status: OK, Detail: detail}
	logs := fmt.Sprintf("kubectl get jobs -n %s -l %s=reconcile, and kubectl logs -n %s job/JOB", cj.Namespace, install.LabelComponent, cj.Namespace)
	switch {
	case cj.Spec.Suspend != nil && *cj.Spec.Suspend:
		c.Status, c.Detail = Warn, "suspended: "+detail
		c.Fix = fmt.Sprintf(`kubectl patch cronjob %s -n %s -p '{"spec":{"suspend":false}}'`, cj.Name, cj.Namespace)
	case cj.Status.LastScheduleTime != nil && cj.Status.LastSuccessfulTime == nil:
		c.Status = Warn
		c.Detail += "; no run has succeeded yet"
		c.Fix = "see the runs: " + logs
	case cj.Status.LastScheduleTime != nil && cj.Status.LastSuccessfulTime != nil &&
		cj.Status.LastScheduleTime.Sub(cj.Status.LastSuccessfulTime.Time) > time.Hour:
		c.Status = Warn
		c.Detail += "; the runs since the last success have failed"
		c.Fix = "see the runs: " + logs
	}
	return c
}

// deploymentCheck reports one Deployment of "reconcile install --serve": how many of
// the replicas it asks for are ready.
func deploymentCheck(d *appsv1.Deployment) Check {
	want := ptrValue(d.Spec.Replicas)
	ready := d.Status.ReadyReplicas
	c := Check{Name: "reconcile " + d.Name, Status: OK,
		Detail: fmt.Sprintf("Deployment %s/%s (reconcile --serve), %d of %d replicas ready", d.Namespace, d.Name, ready, want)}
	pods := fmt.Sprintf("kubectl get pods -n %s -l %s=%s, and kubectl logs -n %s deployment/%s", d.Namespace, install.LabelInstance, d.Name, d.Namespace, d.Name)
	switch {
	case want == 0:
		c.Status, c.Detail = Warn, "scaled to zero: "+c.Detail
		c.Fix = fmt.Sprintf("kubectl scale deployment %s -n %s --replicas 1, or kubectl catalog reconcile install --serve again", d.Name, d.Namespace)
	case ready < want:
		c.Status = Warn
		c.Fix = "see the pods: " + pods
	}
	return c
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

// Print writes the report: a table and the fixes, JSON or YAML.
func Print(streams cmdutil.IOStreams, format string, r Report) error {
	out := streams.Out
	if format == "json" || format == "yaml" {
		return printers.PrintData(out, format, r)
	}
	t := printers.NewTable(out, "CHECK", "STATUS", "DETAIL")
	for _, c := range r.Checks {
		t.Append(c.Name, string(c.Status), c.Detail)
	}
	if err := t.Render(); err != nil {
		return err
	}
	var fixes []string
	for _, c := range r.Checks {
		if c.Status != OK && c.Fix != "" {
			fixes = append(fixes, fmt.Sprintf("  %s: %s", c.Name, c.Fix))
		}
	}
	if len(fixes) > 0 {
		_, err := fmt.Fprintf(out, "\nTo fix:\n%s\n", strings.Join(fixes, "\n"))
		return err
	}
	return nil
}
