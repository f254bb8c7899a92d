// Command cluster runs a local control plane (etcd, kube-apiserver with
// RBAC, kube-controller-manager) in the foreground until it is interrupted.
// `make cluster-up` starts it in the background and `make cluster-down`
// stops it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

func main() {
	dir := flag.String("dir", ".cluster", "Directory for the control plane's data, logs and kubeconfigs.")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ready := filepath.Join(dir, "ready")
	_ = os.Remove(ready)
	cp, err := controlplane.Start(context.Background(), controlplane.Options{Dir: filepath.Join(dir, "data"), Log: os.Stderr})
	if err != nil {
		return err
	}
	kubeconfig := cp.Kubeconfig(controlplane.AdminUser)
	fmt.Printf("control plane ready at %s\n", cp.Server)
	fmt.Printf("users: %s (cluster admin), %s (no role): kubeconfigs in %s\n",
		controlplane.AdminUser, controlplane.DeveloperUser, filepath.Join(dir, "data"))
	fmt.Printf("export KUBECONFIG=%s\n", kubeconfig)
	if err := os.WriteFile(ready, []byte(kubeconfig+"\n"), 0o600); err != nil {
		_ = cp.Stop()
		return err
	}

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	<-signals
	_ = os.Remove(ready)
	fmt.Println("stopping the control plane")
	if err := cp.Stop(); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(dir, "data"))
}
