// Command kube-controller-manager is the upstream controller manager, so that
// namespace deletion and garbage collection behave in tests as in a cluster.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
