package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// cronJobMemoryLimit is the memory limit "reconcile install" gives the CronJob's
// container (pkg/install): a sync that needs more is killed in every run.
const cronJobMemoryLimitKiB = 256 * 1024

// bigCatalogFigures registers a broker whose catalog is about 60 MiB (1,650 services x 20
// plans, each plan with create, update and bind schemas) on a fresh control plane, and
// measures the peak resident memory of "register", of "sync broker" and of the reconcile
// run that relists it. Each is compared with two floors: the reconcile CronJob's memory
// limit (the target: under it), and the peak memory of one LIST of the ConfigMaps the
// catalog was written to, read by kubectl (reported), which is about what reading the
// catalog's records back once costs any client.
func bigCatalogFigures(bins controlplane.Binaries, plugin, dir string) ([]figure, []string, error) {
	ctx := context.Background()
	fmt.Fprintln(os.Stderr, "starting a control plane for the big-catalog figures...")
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: dir + "/cp-big", Log: os.Stderr})
	if err != nil {
		return nil, nil, err
	}
	defer cp.Stop()
	cat := broker.GenerateCatalog(1650, 20)
	body, err := json.Marshal(osb.CatalogResponse{Services: cat.Services})
	if err != nil {
		return nil, nil, err
	}
	size := len(body)
	body = nil
	b, err := broker.New(broker.Options{Catalog: &cat, RequestLogLimit: 100})
	if err != nil {
		return nil, nil, err
	}
	if err := b.Start(); err != nil {
		return nil, nil, err
	}
	defer b.Close()

	kc := cp.Kubeconfig(controlplane.AdminUser)
	common := []string{"--catalog-namespace", "catalog-big", "-n", "default", "--qps", "500", "--burst", "1000"}
	start := time.Now()
	register, err := peakMemory(kc, append([]string{plugin, "register", "big", "--url", b.URL(), "--relist-interval", "1s"}, common...))
	if err != nil {
		return nil, nil, err
	}
	notes := []string{fmt.Sprintf("big catalog: %.1f MiB of JSON, 1,650 classes x 20 plans; registered in %s",
		float64(size)/(1<<20), time.Since(start).Round(time.Millisecond))}
	sync, err := peakMemory(kc, append([]string{plugin, "sync", "broker", "big"}, common...))
	if err != nil {
		return nil, nil, err
	}
	// The relist interval (1s) has passed by now: reconcile fetches the catalog again.
	time.Sleep(1100 * time.Millisecond)
	reconcile, err := peakMemory(kc, append([]string{plugin, "reconcile", "--all-namespaces", "--trust-namespace-writers"}, common[:2]...))
	if err != nil {
		return nil, nil, err
	}
	list, err := peakMemory(kc, []string{bins.Kubectl, "get", "--raw",
		"/api/v1/namespaces/catalog-big/configmaps?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dkubectl-catalog"})
	if err != nil {
		return nil, nil, err
	}
	limit := time.Duration(cronJobMemoryLimitKiB)
	limitWhat := "the reconcile CronJob's memory limit"
	listWhat := "kubectl get --raw (LIST of the catalog's ConfigMaps)"
	return []figure{
		{Name: "register, 60 MiB catalog: peak memory", Value: time.Duration(register), Floor: limit, What: limitWhat, Target: 1, Bytes: true},
		{Name: "sync broker, 60 MiB catalog: peak memory", Value: time.Duration(sync), Floor: limit, What: limitWhat, Target: 1, Bytes: true},
		{Name: "reconcile (relist), 60 MiB catalog: peak memory", Value: time.Duration(reconcile), Floor: limit, What: limitWhat, Target: 1, Bytes: true},
		{Name: "sync broker, 60 MiB catalog: peak memory", Value: time.Duration(sync), Floor: time.Duration(list), What: listWhat, Bytes: true},
	}, notes, nil
}
