// Command tools builds (or finds in the per-user cache) the control-plane
// binaries the end-to-end tests use, and prints where they are.
package main

import (
	"fmt"
	"os"

	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

func main() {
	bins, err := controlplane.EnsureBinaries(os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	for _, p := range []string{bins.Etcd, bins.APIServer, bins.ControllerManager, bins.Kubectl} {
		fmt.Println(p)
	}
}
