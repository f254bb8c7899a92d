// Command kubectl-catalog is a kubectl plugin for Open Service Broker services.
package main

import (
	"context"
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

	return cmd.Execute(ctx, cmdutil.NewFactory(cmdutil.NewStdIOStreams()), os.Args[1:])
}

// interruptContext returns a context cancelled by the first SIGINT or SIGTERM, so a
// command can stop cleanly and say how to resume; a verb waiting for a broker's answer
// is let record it first (cmdutil.Interrupt). A second signal exits at once.
func interruptContext() (context.Context, func()) {
	ctx, in := cmdutil.NewInterrupt(context.Background(), os.Stderr)
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-signals:
				if in.Signal() {
					os.Exit(cmdutil.ExitInterrupted)
				}
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(signals)
		close(done)
		in.Stop()
	}
}
