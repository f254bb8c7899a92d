// Package version implements `kubectl catalog version`.
package version

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	clientversion "github.com/kubectl-catalog/kubectl-catalog/pkg/version"
)

var versionExample = cmdutil.Examples(`
	# Print the plugin's version and the cluster's
	kubectl catalog version

	# Print only the plugin's version, without contacting the cluster
	kubectl catalog version --client

	# Print both as JSON
	kubectl catalog version -o json`)

// Output is what `version -o json|yaml` prints.
type Output struct {
	ClientVersion clientversion.Info `json:"clientVersion"`
	ServerVersion *version.Info      `json:"serverVersion,omitempty"`
}

// Options are the options of `kubectl catalog version`.
type Options struct {
	ClientOnly bool
	// Output is -o: json or yaml, two lines of text without it.
	Output *printers.OutputFlags

	// ServerVersion fetches the cluster's version; nil when ClientOnly.
	ServerVersion func() (*version.Info, error)
	Streams       cmdutil.IOStreams
}

// NewCmdVersion returns the version command.
func NewCmdVersion(f *cmdutil.Factory) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: newOutputFlags()}
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the client and server version",
		Long:    "Print the version of kubectl-catalog and, unless --client is given, of the Kubernetes API server it talks to.",
		Example: versionExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&o.ClientOnly, "client", false, "Print only the client version; do not contact the cluster.")
	o.Output.AddFlags(cmd)
	return cmd
}

// newOutputFlags is version's -o: json or yaml, two lines of text without it.
func newOutputFlags() *printers.OutputFlags {
	return printers.NewFormatOutputFlags([]string{"json", "yaml"}, "", "Output format: one of '', json, yaml.", func(format string) error {
		return cmdutil.UsageErrorf("--output must be json or yaml, not %q", format)
	})
}

// Complete wires the server version lookup unless --client was given.
func (o *Options) Complete(f *cmdutil.Factory) error {
	if o.ClientOnly {
		return nil
	}
	o.ServerVersion = func() (*version.Info, error) {
		dc, err := f.DiscoveryClient()
		if err != nil {
			return nil, err
		}
		return dc.ServerVersion()
	}
	return nil
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if o.Output == nil {
		return nil
	}
	return o.Output.Validate()
}

// Run prints the versions. The client version is printed even when the
// server cannot be reached, as kubectl does, and the error is returned after.
func (o *Options) Run(ctx context.Context) error {
	out := Output{ClientVersion: clientversion.Get()}
	var serverErr error
	if o.ServerVersion != nil {
		out.ServerVersion, serverErr = o.ServerVersion()
	}
	w := o.Streams.Out
	switch o.Output.Format() {
	case "json":
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(w, string(b))
	case "yaml":
		b, err := yaml.Marshal(out)
		if err != nil {
			return err
		}
		fmt.Fprint(w, string(b))
	default:
		fmt.Fprintf(w, "Client Version: %s\n", out.ClientVersion.GitVersion)
		if out.ServerVersion != nil {
			fmt.Fprintf(w, "Server Version: %s\n", out.ServerVersion.GitVersion)
		}
	}
	if serverErr != nil {
		return fmt.Errorf("cannot get the server version: %w", serverErr)
	}
	return nil
}
