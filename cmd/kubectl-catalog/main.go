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
