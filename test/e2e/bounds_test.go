package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// boundsJunk is how many junk ConfigMaps the tenant writes, each with boundsLabels
// OSB-id-shaped labels (about 1.3 MB).
const (
	boundsJunk   = 24
	boundsLabels = 17000
)

// TestBounds_JunkRecordsWithMegabytesOfLabelsCostReconcileLittle: a tenant who may write
// ConfigMaps in her namespace creates twenty-four named like instance records,
// each with about 1.3 MB of labels shaped like OSB id labels (no author: the trust
// policy lets them through). One "reconcile -A" run reports each once as not read,
// drives another namespace's instance, and its peak memory stays far below the 256 MiB
// of reconcile's Pod.
func TestBounds_JunkRecordsWithMegabytesOfLabelsCostReconcileLittle(t *testing.T) {
	serial(t, reconcileEveryNamespace)
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	junkNS := cp.NewNamespace(t)
	var g errgroup.Group
	g.SetLimit(8)
	for i := range boundsJunk {
		g.Go(func() error {
			labels := map[string]string{store.LabelKind: v1alpha1.KindServiceInstance}
			for j := range boundsLabels {
				sum := sha256.Sum256(fmt.Appendf(nil, "%d-%d", i, j))
				labels[store.IDLabelPrefix+hex.EncodeToString(sum[:20])] = "true"
			}
			junk := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: store.ConfigMapName(v1alpha1.KindServiceInstance, fmt.Sprintf("junk-%d", i)), Labels: labels}}
			// A busy API server may time out on a megabyte of labels: write it again
			// (one that landed anyway is there already).
			for attempt := 0; ; attempt++ {
				_, err := admin.CoreV1().ConfigMaps(junkNS).Create(ctx, junk, metav1.CreateOptions{})
				switch {
				case attempt > 0 && apierrors.IsAlreadyExists(err):
					return nil
				case attempt < 3 && (apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)):
					continue
				}
				return err
			}
		})
	}
	assert.NilError(t, g.Wait())
	ns, _, _ := instSetup(t)
	r := instCatalog(t, ns, "provision", "db", "--class", "postgresql", "--plan", "standard")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	// reconcile -A, with its peak memory (the resident set the kernel counted).
	cmd := exec.Command(filepath.Join(binDir, "kubectl-catalog"), "-n", ns, "reconcile", "-o", "json", asRunner, "-A",
		"--interval", "200ms", "--max-duration", "60s")
	cmd.Env = append(instEnviron(t), recEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatalf("reconcile: %v", err)
	}
	maxRSS := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	t.Logf("reconcile -A took %s, peak resident set %d MiB; exit %d\n%s", time.Since(start), maxRSS>>20, cmd.ProcessState.ExitCode(), stderr.String())
	var sum reconcile.Summary
	assert.NilError(t, json.Unmarshal(stdout.Bytes(), &sum), stderr.String())

	it, ok := recItem(sum, ns, "db")
	assert.Assert(t, ok, "%+v", sum.Items)
	assert.Equal(t, it.Outcome, reconcile.Done, "%+v", it)
	reported := 0
	for _, it := range sum.Items {
		if it.Namespace == junkNS {
			reported++
			assert.Check(t, it.Outcome == reconcile.Failed && strings.Contains(it.Detail, "not read: its ConfigMap's labels and annotations hold"), "%+v", it)
		}
	}
	assert.Check(t, is.Equal(reported, boundsJunk))
	// Far below the Pod's 256 MiB; the list of every label of these ConfigMaps alone
	// took more than that.
	// 1061 MiB before the bounds with eighty such records (about 320 MiB with these
	// twenty-four); 131-163 MiB since, as the binary grew: 192 keeps a margin and still
	// catches the defect.
	assert.Check(t, maxRSS < 192<<20, "reconcile's peak resident set was %d MiB", maxRSS>>20)
}
