package e2e

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// Without --image, a versioned build installs its own image, a development build
// refuses and changes nothing.
func TestReconcileInstallImage_VersionedBuildUsesItsOwnImage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	ns := cp.NewNamespace(t)
	installCleanup(t, admin, ns)

	// The e2e build of the plugin has no version: it refuses, and says what to do.
	r := kubectl(t, controlplane.AdminUser, "catalog", "reconcile", "install", "--namespace", ns, "--no-trust-policy")
	assert.Equal(t, r.ExitCode, 2, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "development build without a version"))
	assert.Assert(t, is.Contains(r.Stderr, "pass --image"))
	_, err = admin.CoreV1().ServiceAccounts(ns).Get(ctx, install.DefaultName, metav1.GetOptions{})
	assert.Assert(t, apierrors.IsNotFound(err), "a refused install creates nothing: %v", err)

	const version = versionedVersion
	bin := versionedPlugin(t)
	r = runCommand(t, bin, controlplane.AdminUser, "reconcile", "install", "--namespace", ns, "--no-trust-policy")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "cronjob.batch/catalog-reconcile created\n"))
	cj, err := admin.BatchV1().CronJobs(ns).Get(ctx, install.DefaultName, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image, versionedRegistry+"/kubectl-catalog:"+version)

	// --image wins over the build's own.
	r = runCommand(t, bin, controlplane.AdminUser, "reconcile", "install", "--namespace", ns, "--no-trust-policy", "--image", "mirror.test.invalid/kubectl-catalog:"+version)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "cronjob.batch/catalog-reconcile configured\n"))
	cj, err = admin.BatchV1().CronJobs(ns).Get(ctx, install.DefaultName, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image, "mirror.test.invalid/kubectl-catalog:"+version)

	r = kubectl(t, controlplane.AdminUser, "catalog", "reconcile", "uninstall", "--namespace", ns, "--yes")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
}

// --serve --replicas 2: a Deployment with probes and a PodDisruptionBudget, which the
// API server accepts in a server dry run and then creates; --shards 2 replaces it with
// two CronJobs; uninstall removes whatever is there.
func TestReconcileInstallImage_ServeWithReplicasAndShards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	ns := cp.NewNamespace(t)
	const image = "example.invalid/kubectl-catalog:test"
	installCleanup(t, admin, ns)
	args := []string{"catalog", "reconcile", "install", "--image", image, "--namespace", ns, "--no-trust-policy"}

	r := kubectl(t, controlplane.AdminUser, append(args, "--serve", "--replicas", "2", "--dry-run=server")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "deployment.apps/catalog-reconcile created (server dry run)\n"))
	assert.Assert(t, is.Contains(r.Stdout, "poddisruptionbudget.policy/catalog-reconcile created (server dry run)\n"))
	_, err = admin.AppsV1().Deployments(ns).Get(ctx, install.DefaultName, metav1.GetOptions{})
	assert.Assert(t, apierrors.IsNotFound(err), "a dry run stores nothing: %v", err)

	r = kubectl(t, controlplane.AdminUser, append(args, "--serve", "--replicas", "2")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	d, err := admin.AppsV1().Deployments(ns).Get(ctx, install.DefaultName, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, *d.Spec.Replicas, int32(2))
	c := d.Spec.Template.Spec.Containers[0]
	assert.Equal(t, c.Image, image)
	assert.Assert(t, is.Contains(strings.Join(c.Command, " "), "reconcile -A --serve"))
	assert.Assert(t, c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil && c.ReadinessProbe.HTTPGet.Path == "/healthz")
	assert.Assert(t, c.LivenessProbe != nil && c.LivenessProbe.HTTPGet != nil && c.LivenessProbe.HTTPGet.Path == "/healthz")
	assert.Equal(t, *d.Spec.Template.Spec.SecurityContext.RunAsUser, int64(install.RunAsUser))
	assert.Equal(t, d.Spec.Template.Spec.ServiceAccountName, install.DefaultName)
	pdb, err := admin.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, install.DefaultName, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, pdb.Spec.MinAvailable.IntValue(), 1)
	assert.DeepEqual(t, pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels)

	// Applied again: nothing changes.
	r = kubectl(t, controlplane.AdminUser, append(args, "--serve", "--replicas", "2")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "deployment.apps/catalog-reconcile unchanged\n"))
	assert.Assert(t, is.Contains(r.Stdout, "poddisruptionbudget.policy/catalog-reconcile unchanged\n"))

	// Two shards from CronJobs instead: the Deployment and its budget are pruned.
	r = kubectl(t, controlplane.AdminUser, append(args, "--shards", "2")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, line := range []string{
		"cronjob.batch/catalog-reconcile-0 created", "cronjob.batch/catalog-reconcile-1 created",
		"deployment.apps/catalog-reconcile pruned", "poddisruptionbudget.policy/catalog-reconcile pruned",
	} {
		assert.Assert(t, is.Contains(r.Stdout, line+"\n"))
	}
	for i, name := range []string{"catalog-reconcile-0", "catalog-reconcile-1"} {
		cj, err := admin.BatchV1().CronJobs(ns).Get(ctx, name, metav1.GetOptions{})
		assert.NilError(t, err)
		assert.Assert(t, is.Contains(strings.Join(cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Command, " "),
			"--shard "+string(rune('0'+i))+"/2"))
	}
	_, err = admin.AppsV1().Deployments(ns).Get(ctx, install.DefaultName, metav1.GetOptions{})
	assert.Assert(t, apierrors.IsNotFound(err), "deployment: %v", err)

	r = kubectl(t, controlplane.AdminUser, "catalog", "reconcile", "uninstall", "--namespace", ns, "--yes")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "cronjob.batch/catalog-reconcile-0 deleted\n"))
	assert.Assert(t, is.Contains(r.Stdout, "cronjob.batch/catalog-reconcile-1 deleted\n"))
	cjs, err := admin.BatchV1().CronJobs(ns).List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	assert.Equal(t, len(cjs.Items), 0)
}
