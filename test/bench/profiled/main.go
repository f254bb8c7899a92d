// Command profiled is kubectl-catalog built for the bench's profiles: the same commands,
// with a CPU profile of the whole process written to the file named by
// KUBECTL_CATALOG_CPUPROFILE (when set). The bench runs it in place of the plugin for
// the run it profiles ("-profile DIR").
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// ProfileEnv names the file the CPU profile is written to.
const ProfileEnv = "KUBECTL_CATALOG_CPUPROFILE"

func main() {
	os.Exit(run())
}

func run() int {
	if path := os.Getenv(ProfileEnv); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "cpu profile:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "cpu profile:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cmd.Execute(ctx, cmdutil.NewFactory(cmdutil.NewStdIOStreams()), os.Args[1:])
}
