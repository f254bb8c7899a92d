// Package update implements "kubectl catalog update".
package update

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
)

var updateLong = cmdutil.LongDesc(`
	Change a service instance: its plan, its parameters, or its maintenance
	version.

	Only what you give is changed: the parameters given are merged into the
	instance's. The broker gets, with the previous plan as previous_values,
	the parameters whose values change, every one you name even with the
	value it holds, those read from Secrets, and those the plan's update
	schema asks every update for (required, at any depth of allOf, anyOf,
	oneOf or if/then) that the instance holds: those are sent again
	unchanged, and the command says so. That body, exactly, is checked
	against the update schema before anything is written; a parameter the
	schema asks for and the instance has no value for is named, with the -p
	that gives it. Naming only values the broker holds sends nothing. A plan
	change is only possible when the broker says the plan is updateable.
	--upgrade moves the instance to its plan's newest maintenance_info.

	When the broker refuses an update, the instance keeps running with its
	previous plan and parameters: it stays Ready and can be bound, and the
	command fails saying why (the UpdateFailed condition of "describe
	instance" keeps the broker's words). --revert sets the spec back to what
	the broker holds (plan, maintenance version, inline parameters and the
	Secrets parameters are read from); the instance is then Ready again
	without a call to the broker, unless a parameters Secret changed since,
	which an update sends.

	--wait alone changes nothing: it waits for the operation under way on the
	instance (an update started without --wait, say) until it is Ready, as
	"kubectl catalog wait instance/NAME" does.

	--max-bindings and --allowed-namespaces limit the instance's consumers
	(its bindings, from every namespace it is shared with); they need no
	broker call. Bindings beyond a lowered limit stay; new ones are refused.
	Bindings of other namespaces no longer allowed are removed, as by
	"kubectl catalog unshare".

	--rebind rotates the instance's bindings once the update settled, one at
	a time, as "kubectl catalog bind --rotate" does: a new binding id is
	bound, its Secret gets the new credentials in one write (workloads it is
	projected into see them), and only then is the old id unbound. This is
	recorded before anything is sent, so "kubectl catalog reconcile" finishes
	it when the command is interrupted. A binding whose rotation fails keeps
	its old credentials, and the command says so (exit 1). An update the
	broker refuses rotates nothing. Bindings of other namespaces the instance
	is shared with are rotated too. --rebind alone (or --rebind=once) is for
	this update; --rebind=always, --rebind=plan-change or --rebind=never sets
	what is done after every update (spec.rebindOnUpdate), from this one on.`)

var updateExample = cmdutil.Examples(`
	# Move an instance to another plan
	kubectl catalog update db --plan standard --wait

	# Wait for the update under way (started without --wait)
	kubectl catalog update db --wait

	# Change one parameter
	kubectl catalog update db -p storage_gb=8

	# Apply the plan's newer maintenance version
	kubectl catalog update db --upgrade

	# Allow at most 5 bindings, from namespaces team-a and team-b only
	kubectl catalog update db --max-bindings 5 --allowed-namespaces team-a,team-b

	# Move to another plan, then rotate the bindings (new credentials, Secrets swapped)
	kubectl catalog update db --plan standard --rebind --wait

	# From now on, rotate the bindings after every update that changes the plan
	kubectl catalog update db --rebind=plan-change

	# Go back to what the broker holds after it refused an update
	kubectl catalog update db --revert

	# Show the instance record a plan change would write, without writing it or calling the broker
	kubectl catalog update db --plan standard --dry-run=client -o yaml`)

// Options are the options of update.
type Options struct {
	Name    string
	Plan    string
	Upgrade bool
	Revert  bool
	Params  lifecycle.ParamFlags
	Limits  lifecycle.LimitFlags
	// Rebind is --rebind: once (alone), or the spec's choice (always, plan-change, never).
	Rebind string
	// Yes is --yes: become the author of what another person wrote without asking.
	Yes bool

	Credentials lifecycle.CredentialFlags

	// attach: --wait alone, which waits for the operation under way (Validate sets it).
	attach bool

	lifecycle.VerbOptions
}

// NewCmdUpdate returns the update command. runF, when not nil, is called with the
// completed options instead of Run (for tests of the flags).
func NewCmdUpdate(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{VerbOptions: lifecycle.NewVerbOptions(f)}
	cmd := lifecycle.OnInstance(f, &cobra.Command{
		Use:     "update NAME [--plan PLAN] [-p key=value]... [--upgrade] | update NAME --revert",
		Short:   "Change a service instance's plan or parameters",
		Long:    updateLong,
		Example: updateExample,
		PreRun: func(cmd *cobra.Command, _ []string) {
			o.Limits.SetGiven(cmd.Flags())
			o.Namespace = f.FlagNamespace() // for the hints of Validate; Complete sets it
		},
	}, &o.Name, o, runF)
	cmd.Flags().StringVar(&o.Plan, "plan", "", "The plan to move to.")
	complete.Register(cmd, "plan", complete.PlansOfInstance(f))
	cmd.Flags().BoolVar(&o.Upgrade, "upgrade", false, "Move to the plan's newest maintenance_info version.")
	cmd.Flags().BoolVar(&o.Revert, "revert", false, "Set the spec back to the plan and parameters the broker holds (after a refused update).")
	o.Params.AddFlags(cmd.Flags())
	o.Limits.AddFlags(cmd.Flags())
	o.Credentials.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.Rebind, "rebind", "", "Rotate the instance's bindings once the update settled: alone (or =once) for this update; =always, =plan-change or =never after every update (spec.rebindOnUpdate).")
	cmd.Flags().Lookup("rebind").NoOptDefVal = rebindOnce
	complete.Register(cmd, "rebind", complete.Fixed(rebindOnce, "always", "plan-change", "never"))
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, cmdutil.VouchYesUsage)
	o.AddFlags(cmd, "update", "the instance record")
	return cmd
}

// brokered reports whether the flags change what only a brokered instance has.
func (o *Options) brokered() bool {
	return o.Plan != "" || o.Upgrade || o.Params.Given() || len(o.Params.FromSecret) > 0
}

// Validate checks the flags without I/O. It changes nothing.
func (o *Options) Validate() error {
	if err := o.Limits.Validate(); err != nil {
		return err
	}
	brokered := o.brokered()
	if _, _, err := o.rebind(); err != nil {
		return err
	}
	if o.Rebind != "" && o.Credentials.Given() {
		return cmdutil.UsageErrorf("--rebind is for an instance of a broker: the bindings of a user-provided instance get a copy of its credentials whenever they change")
	}
	changes := brokered || o.Limits.Given() || o.Credentials.Given() || o.Rebind != ""
	if brokered && o.Credentials.Given() {
		return cmdutil.UsageErrorf("--credentials-*, --syslog-drain-url and --route-service-url change a user-provided instance, which has no plan or parameters: give them without --plan, parameters or --upgrade")
	}
	if err := o.Credentials.Validate(); err != nil {
		return err
	}
	if o.Revert && changes {
		return cmdutil.UsageErrorf("--revert sets the spec back to what the broker holds: give it alone, without --plan, parameters, --upgrade or --rebind")
	}
	if !o.Revert && !changes && o.Wait.Wait && !o.DryRun.Enabled() {
		o.attach = true
		return o.ValidateFlags("records nothing")
	}
	if !o.Revert && !changes {
		return cmdutil.UsageErrorf("nothing to update: give --plan, parameters (-p, --params-json, --params-file, --params-from-secret), --upgrade, --max-bindings, --allowed-namespaces, --rebind, --revert, or for a user-provided instance --credentials-json, --credentials-file, --credentials-from-secret, --credentials-keys, --syslog-drain-url or --route-service-url; --wait alone waits for the update under way")
	}
	if err := o.Params.Validate(); err != nil {
		return err
	}
	if o.DryRun.Enabled() && o.Revert {
		return cmdutil.UsageErrorf("--revert cannot be combined with --dry-run: see what it would set back with %s", hint.Quoted(o.Namespace, "describe", "instance", o.Name))
	}
	return o.ValidateFlags("records nothing")
}

// Run updates the instance (engine.Engine.Update, or Revert) and prints the outcome.
func (o *Options) Run(ctx context.Context) error {
	return o.RunOnInstance(o.Name, "updated", "update", func(follow engine.Follow) (engine.InstanceResult, error) {
		if o.attach {
			r, err := o.Engine.Wait(ctx, engine.WaitRequest{Kind: v1alpha1.KindServiceInstance, Namespace: o.Namespace, Name: o.Name, For: engine.WaitForReady, Follow: follow})
			return engine.InstanceResult{Result: r}, err
		}
		if o.Revert {
			return o.Engine.Revert(ctx, engine.RevertRequest{Namespace: o.Namespace, Name: o.Name, Follow: follow,
				Vouch: cmdutil.Voucher(o.Prompter, o.Streams.ErrOut, o.Yes, "update")})
		}
		req, err := o.Request(follow)
		if err != nil {
			return engine.InstanceResult{}, err
		}
		res, err := o.Engine.Update(ctx, req)
		if err == nil && req.Rebind && !o.DryRun.Enabled() {
			err = rebound(res, follow)
		}
		return res, err
	})
}

// rebindOnce is the value of --rebind given alone.
const rebindOnce = "once"

// rebind is what --rebind asks for: once (this update), or the spec's choice.
func (o *Options) rebind() (once bool, policy *v1alpha1.RebindPolicy, err error) {
	switch o.Rebind {
	case "":
		return false, nil, nil
	case rebindOnce:
		return true, nil, nil
	}
	p, ok := engine.ParseRebindPolicy(o.Rebind)
	if !ok {
		return false, nil, cmdutil.UsageErrorf("invalid value %q for --rebind: give --rebind alone (or --rebind=once) for this update, or --rebind=always, --rebind=plan-change or --rebind=never for every update", o.Rebind)
	}
	return false, &p, nil
}

// rebound says how the rotation of the bindings "update --rebind" asked for went: a
// note when it is done, an error naming the bindings whose rotation failed.
func rebound(res engine.InstanceResult, follow engine.Follow) error {
	inst := res.Instance
	if inst == nil || !res.Rebind {
		return nil
	}
	if inst.Status.Rebind != nil {
		if follow.Note != nil {
			follow.Note(fmt.Sprintf("The bindings of instance %q are still being rotated (%s): %s finishes it.", inst.Name, res.Message, hint.Quoted(inst.Namespace, "reconcile")))
		}
		return nil
	}
	msg, ok := engine.RebindOutcome(inst)
	if msg == "" {
		return nil
	}
	if !ok {
		return fmt.Errorf("instance %q: %s; see %s", inst.Name, msg, hint.Quoted(inst.Namespace, "describe", "instance", inst.Name))
	}
	if follow.Note != nil {
		follow.Note("Rebind: " + msg + ".")
	}
	return nil
}

// Request is the request of the change the flags ask for, the parameters read.
func (o *Options) Request(follow engine.Follow) (engine.InstanceUpdateRequest, error) {
	req := engine.InstanceUpdateRequest{
		Namespace: o.Namespace, Name: o.Name,
		UpdateRequest: engine.UpdateRequest{Plan: o.Plan, Upgrade: o.Upgrade},
		Limits:        o.Limits.Limits(),
		DryRun:        o.DryRun.Engine(),
		Follow:        follow,
		Vouch:         cmdutil.Voucher(o.Prompter, o.Streams.ErrOut, o.Yes, "update"),
	}
	req.Rebind, req.RebindOnUpdate, _ = o.rebind()
	if o.Credentials.Given() {
		req.Credentials = o.Credentials.Input(o.Streams.In, o.Prompter)
	}
	params, err := o.Params.Changes(o.Streams.In)
	req.Parameters = params
	return req, err
}
