// Package update implements "kubectl catalog update".
package update

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog/credentials"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

var updateLong = cmdutil.LongDesc(`
	Change a service instance: its plan, its parameters, or its maintenance
	version.

	Only what you give is changed and sent to the broker: new or changed
	parameters are merged into the instance's parameters, and the broker
	gets only those (with the previous plan as previous_values). A plan
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

	--max-bindings and --allowed-namespaces limit the instance's consumers
	(its bindings, from every namespace it is shared with); they need no
	broker call. Bindings beyond a lowered limit stay; new ones are refused.
	Bindings of other namespaces no longer allowed are removed, as by
	"kubectl catalog unshare".`)

var updateExample = cmdutil.Examples(`
	# Move an instance to another plan
	kubectl catalog update db --plan standard --wait

	# Change one parameter
	kubectl catalog update db -p storage_gb=8

	# Apply the plan's newer maintenance version
	kubectl catalog update db --upgrade

	# Allow at most 5 bindings, from namespaces team-a and team-b only
	kubectl catalog update db --max-bindings 5 --allowed-namespaces team-a,team-b

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
	Wait    lifecycle.WaitFlags

	Credentials lifecycle.CredentialFlags
	Output      *printers.OutputFlags
	DryRun      cmdutil.DryRunStrategy

	Namespace        string
	CatalogNamespace string
	Store            *store.Store
	Engine           *catalog.Engine
	Prompter         prompt.Prompter
	Streams          cmdutil.IOStreams
	// Now is the factory's clock.
	Now func() time.Time
}

// NewCmdUpdate returns the update command.
func NewCmdUpdate(f *cmdutil.Factory) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: printers.NewOutputFlags(false)}
	cmd := &cobra.Command{
		Use:               "update NAME [--plan PLAN] [-p key=value]... [--upgrade] | update NAME --revert",
		Short:             "Change a service instance's plan or parameters",
		Long:              updateLong,
		Example:           updateExample,
		Args:              lifecycle.ExactlyOneName,
		ValidArgsFunction: complete.First(complete.Instances(f)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := o.Limits.Validate(cmd.Flags()); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(f); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.Plan, "plan", "", "The plan to move to.")
	complete.Register(cmd, "plan", complete.PlansOfInstance(f))
	cmd.Flags().BoolVar(&o.Upgrade, "upgrade", false, "Move to the plan's newest maintenance_info version.")
	cmd.Flags().BoolVar(&o.Revert, "revert", false, "Set the spec back to the plan and parameters the broker holds (after a refused update).")
	o.Params.AddFlags(cmd.Flags())
	o.Limits.AddFlags(cmd.Flags())
	o.Credentials.AddFlags(cmd.Flags())
	o.Wait.AddFlags(cmd.Flags(), "update")
	o.Output.AddFlags(cmd)
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, "the instance record")
	return cmd
}

// Validate checks the flags without I/O.
func (o *Options) Validate() error {
	brokered := o.Plan != "" || o.Upgrade || o.Params.Given() || len(o.Params.FromSecret) > 0
	changes := brokered || o.Limits.Given() || o.Credentials.Given()
	if brokered && o.Credentials.Given() {
		return cmdutil.UsageErrorf("--credentials-*, --syslog-drain-url and --route-service-url change a user-provided instance, which has no plan or parameters: give them without --plan, parameters or --upgrade")
	}
	if err := o.Credentials.Validate(); err != nil {
		return err
	}
	if o.Revert && changes {
		return cmdutil.UsageErrorf("--revert sets the spec back to what the broker holds: give it alone, without --plan, parameters or --upgrade")
	}
	if !o.Revert && !changes {
		return cmdutil.UsageErrorf("nothing to update: give --plan, parameters (-p, --params-json, --params-file, --params-from-secret), --upgrade, --max-bindings, --allowed-namespaces, --revert, or for a user-provided instance --credentials-json, --credentials-file, --credentials-from-secret, --credentials-keys, --syslog-drain-url or --route-service-url")
	}
	if err := o.Params.Validate(); err != nil {
		return err
	}
	if err := o.Wait.Validate(); err != nil {
		return err
	}
	if o.DryRun.Enabled() && o.Revert {
		return cmdutil.UsageErrorf("--revert cannot be combined with --dry-run: see what it would set back with \"kubectl catalog describe instance %s\"", o.Name)
	}
	if err := cmdutil.DryRunWithWait(o.DryRun, o.Wait.Wait, "records nothing"); err != nil {
		return err
	}
	return o.Output.Validate()
}

// Complete builds the clients.
func (o *Options) Complete(f *cmdutil.Factory) error {
	ns, _, err := f.Namespace()
	if err != nil {
		return err
	}
	o.Namespace, o.CatalogNamespace, o.Now = ns, f.CatalogNamespace, f.Now
	eng, err := f.Engine(cmdutil.EngineOptions{PollInterval: o.Wait.Interval})
	if err != nil {
		return err
	}
	o.Engine, o.Store = eng.Engine, eng.Store
	if o.Prompter == nil && o.Streams.CanPrompt() {
		o.Prompter = prompt.NewSurvey(o.Streams.In, o.Streams.Out, o.Streams.ErrOut)
	}
	return nil
}

// Run changes the spec and drives the instance.
func (o *Options) Run(ctx context.Context) error {
	if o.Revert {
		return o.revert(ctx)
	}
	inst, err := o.Store.Instances().Get(ctx, o.Namespace, o.Name)
	if err != nil {
		return err
	}
	if err := catalog.CheckChangeable(inst, o.Now()); err != nil {
		return err
	}
	if inst.IsUserProvided() {
		return o.updateUserProvided(ctx, inst)
	}
	if o.Credentials.Given() {
		return cmdutil.UsageErrorf("instance %q is not user-provided: its credentials come from its broker (rotate a binding's with \"kubectl catalog bind --rotate\")", o.Name)
	}
	req := catalog.UpdateRequest{Plan: o.Plan, Upgrade: o.Upgrade}
	if o.Params.Given() || len(o.Params.FromSecret) > 0 {
		params, err := o.Params.Input(o.Streams.In)
		if err != nil {
			return err
		}
		req.Parameters = &params
	}
	prepared, err := o.Engine.PrepareUpdate(ctx, inst, req)
	if err != nil {
		return err
	}
	for _, n := range prepared.Notes {
		fmt.Fprintln(o.Streams.ErrOut, n)
	}
	inst, changes := prepared.Instance, prepared.Changes
	changes = append(changes, o.Limits.Apply(&inst.Spec)...)
	if len(changes) == 0 {
		fmt.Fprintf(o.Streams.ErrOut, "Nothing to update for instance %q.\n", o.Name)
		return nil
	}
	if o.DryRun.Enabled() {
		return o.printDryRun(ctx, inst, fmt.Sprintf("instance %q in namespace %q would be updated (%s)", o.Name, o.Namespace, strings.Join(changes, ", ")))
	}
	fmt.Fprintf(o.Streams.ErrOut, "Updating instance %q in namespace %q (%s)...\n", o.Name, o.Namespace, strings.Join(changes, ", "))
	if _, err := o.Store.Instances().Update(store.WithIntent(ctx), inst); err != nil {
		if store.IsConflict(err) {
			return fmt.Errorf("instance %q changed while it was being updated: run the command again", o.Name)
		}
		return err
	}
	r, err := lifecycle.Drive(ctx, o.Streams, o.Engine, o.Namespace, o.Name, "update", o.Wait)
	if err != nil {
		return err
	}
	return lifecycle.Report(o.Streams, o.Output, r, o.Name, o.Namespace, "update", o.Wait.Wait)
}

// revert sets the spec back to what the broker holds and drives the instance, which then
// settles without a broker call (or sends the update a changed parameters Secret needs).
func (o *Options) revert(ctx context.Context) error {
	inst, changes, err := o.Engine.Revert(ctx, o.Namespace, o.Name)
	if err != nil {
		return err
	}
	if len(changes) == 0 {
		if meta.IsStatusConditionTrue(inst.Status.Conditions, v1alpha1.ConditionUpdateFailed) {
			return fmt.Errorf(`instance %q already asks for the plan and parameters the broker holds: the refused update came from the values of a parameters Secret or from "touch": put the Secret's values back and run "kubectl catalog touch instance %s", or change the spec`, o.Name, o.Name)
		}
		fmt.Fprintf(o.Streams.ErrOut, "Nothing to revert: instance %q asks for what the broker holds.\n", o.Name)
		return nil
	}
	// The values come from the record's status: say what was written as your intent.
	fmt.Fprintf(o.Streams.ErrOut, "Reverting instance %q in namespace %q to what the broker holds (%s)...\n", o.Name, o.Namespace, strings.Join(changes, "; "))
	r, err := lifecycle.Drive(ctx, o.Streams, o.Engine, o.Namespace, o.Name, "update", o.Wait)
	if err != nil {
		return err
	}
	return lifecycle.Report(o.Streams, o.Output, r, o.Name, o.Namespace, "update", o.Wait.Wait)
}

// updateUserProvided changes the credentials (and limits) of a user-provided instance:
// the spec's revision first, so the change is the user's and the instance stays pending
// until every binding has the new credentials; then the credentials Secret; then the
// instance is driven, which copies them to every binding it can (reconcile does the rest).
func (o *Options) updateUserProvided(ctx context.Context, inst *v1alpha1.ServiceInstance) error {
	if o.Plan != "" || o.Upgrade || o.Params.Given() || len(o.Params.FromSecret) > 0 {
		return cmdutil.UsageErrorf("instance %q is user-provided: it has no plan or parameters; change its credentials with --credentials-json, --credentials-file, --credentials-from-secret or --credentials-keys", o.Name)
	}
	changes := o.Limits.Apply(&inst.Spec)
	var data map[string][]byte
	if o.Credentials.Given() {
		var err error
		if data, err = o.Credentials.Read(ctx, o.Streams.In, o.Prompter, o.Store, o.Namespace); err != nil {
			return err
		}
		if data == nil {
			// Only a URL changes: the other credentials stay.
			cur, err := o.Store.ReadOwnedSecret(ctx, inst, inst.Spec.UserProvided.CredentialsSecret)
			if err != nil {
				return fmt.Errorf("cannot read the credentials of instance %q to change its URLs: %w", o.Name, err)
			}
			data = cur.Data
		}
		if data, err = o.Credentials.WithURLs(data, o.Credentials.Sources() == 0); err != nil {
			return err
		}
		inst.Spec.UserProvided.Revision++
		changes = append(changes, "credentials "+strings.Join(credentials.Keys(data), ", "))
	}
	if len(changes) == 0 {
		fmt.Fprintf(o.Streams.ErrOut, "Nothing to update for instance %q.\n", o.Name)
		return nil
	}
	if o.DryRun.Enabled() {
		what := fmt.Sprintf("user-provided instance %q in namespace %q would be updated (%s)", o.Name, o.Namespace, strings.Join(changes, ", "))
		if data != nil {
			what += fmt.Sprintf(", its credentials written to Secret %q", inst.Spec.UserProvided.CredentialsSecret)
		}
		return o.printDryRun(ctx, inst, what)
	}
	fmt.Fprintf(o.Streams.ErrOut, "Updating user-provided instance %q in namespace %q (%s)...\n", o.Name, o.Namespace, strings.Join(changes, ", "))
	stored, err := o.Store.Instances().Update(store.WithIntent(ctx), inst)
	if err != nil {
		if store.IsConflict(err) {
			return fmt.Errorf("instance %q changed while it was being updated: run the command again", o.Name)
		}
		return err
	}
	if data != nil {
		if err := o.Engine.WriteUserProvidedCredentials(ctx, stored, data); err != nil {
			return fmt.Errorf("the credentials of instance %q could not be written to Secret %q (its bindings keep the old ones): %w", o.Name, inst.Spec.UserProvided.CredentialsSecret, err)
		}
	}
	r, err := lifecycle.Drive(ctx, o.Streams, o.Engine, o.Namespace, o.Name, "update", o.Wait)
	if err != nil {
		return err
	}
	return lifecycle.Report(o.Streams, o.Output, r, o.Name, o.Namespace, "update", o.Wait.Wait)
}

// printDryRun prints the instance record that would be written: for --dry-run=server,
// as the API server (validation and admission, the trust policy included) accepted it
// without storing it. No broker is called and no Secret is written.
func (o *Options) printDryRun(ctx context.Context, inst *v1alpha1.ServiceInstance, what string) error {
	out := inst
	if o.DryRun == cmdutil.DryRunServer {
		updated, err := o.Store.Instances().Update(store.WithIntent(o.DryRun.Context(ctx)), inst)
		if err != nil {
			if store.IsConflict(err) {
				return fmt.Errorf("instance %q changed while it was being updated: run the command again", o.Name)
			}
			return fmt.Errorf("instance %q would not be updated: %w", o.Name, err)
		}
		out = updated
	}
	return printers.PrintDryRun(o.Streams, o.Output, o.DryRun, out, "updated", what)
}
