// Command kubectl-catalog is a kubectl plugin for Open Service Broker services.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	// Authentication plugins (exec, OIDC) for kubeconfigs that use them.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

func main() {
	os.Exit(run())
}

func run() int {
	ctx, stop := interruptContext()
	defer stop()

	f := cmdutil.NewFactory(cmdutil.NewStdIOStreams())
	root := cmd.NewCmdRoot(f)
	err := f.ExplainClusterError(cmd.AsUsageError(root.ExecuteContext(ctx)))
	if cmdutil.ShouldPrint(err) {
		fmt.Fprintln(f.ErrOut, "error:", err)
	}
	code := cmdutil.ExitCode(err)
	if code == cmdutil.ExitUsage {
		c, _, findErr := root.Find(os.Args[1:])
		if findErr != nil || c == nil {
			c = root
		}
		fmt.Fprintf(f.ErrOut, "Run '%s --help' for usage.\n", c.CommandPath())
	}
	return code
}

// interruptContext returns a context cancelled by the first SIGINT or
// SIGTERM, so a command can stop cleanly and say how to resume. A second
// signal exits at once.
func interruptContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-signals:
			cancel()
		case <-ctx.Done():
			return
		}
		<-signals
		os.Exit(cmdutil.ExitInterrupted)
	}()
	return ctx, func() {
		signal.Stop(signals)
		cancel()
	}
}
