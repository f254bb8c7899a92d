package reconcile_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
)

const testImage = "example.invalid/kubectl-catalog:test"

// The client dry run needs no cluster: cmdtest's kubeconfig does not exist.
func TestInstall_ClientDryRunPrintsTheManifests(t *testing.T) {
	t.Setenv(cmdutil.CatalogNamespaceEnv, "")
	out, err := cmdtest.RunOfflineOutput(t, "reconcile", "install", "--image", testImage, "--dry-run=client", "-o", "yaml")
	assert.NilError(t, err)
	// The token is new on every run.
	token := regexp.MustCompile(`token: [0-9a-f-]{36}\n`)
	assert.Assert(t, token.MatchString(out), out)
	golden.Assert(t, token.ReplaceAllString(out, "token: TOKEN\n"), "install.golden.yaml")

	// Every document parses, and they come in the order they are applied.
	var kinds []string
	for _, doc := range strings.Split(out, "---\n") {
		var m map[string]any
		assert.NilError(t, yaml.Unmarshal([]byte(doc), &m))
		kinds = append(kinds, m["kind"].(string))
	}
	assert.DeepEqual(t, kinds, []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "NetworkPolicy", "CronJob",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ConfigMap"})

	// Without the trust policy: a loud warning, and none of its objects.
	out, errOut, err := cmdtest.RunOfflineOutputs(t, "reconcile", "install", "--image", testImage, "--dry-run=client", "--no-trust-policy")
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(errOut, "WARNING: --no-trust-policy"))
	assert.Assert(t, !strings.Contains(out, "validatingadmissionpolicy"), out)

	out, err = cmdtest.RunOfflineOutput(t, "reconcile", "install", "--image", testImage, "--dry-run", "-o", "json")
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(out, `"kind": "List"`))

	out, err = cmdtest.RunOfflineOutput(t, "reconcile", "install", "--image", testImage, "--dry-run=client")
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(out, "cronjob.batch/catalog-reconcile created (dry run)\n"))
}

func TestInstall_UsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "no image on a development build", args: []string{}, wantErr: "development build without a version, so it has no image of its own: pass --image"},
		{name: "serve with a schedule", args: []string{"--image", testImage, "--serve", "--schedule", "@hourly"}, wantErr: "--schedule is for the CronJob"},
		{name: "replicas without serve", args: []string{"--image", testImage, "--replicas", "2"}, wantErr: "--replicas needs --serve"},
		{name: "no replicas", args: []string{"--image", testImage, "--serve", "--replicas", "0"}, wantErr: "--replicas must be at least 1"},
		{name: "no shards", args: []string{"--image", testImage, "--shards", "0"}, wantErr: "--shards"},
		{name: "bad schedule", args: []string{"--image", testImage, "--schedule", "*/5 * * *"}, wantErr: "--schedule"},
		{name: "bad minute", args: []string{"--image", testImage, "--schedule", "61 * * * *"}, wantErr: "minute field"},
		{name: "zero max duration", args: []string{"--image", testImage, "--max-duration", "0"}, wantErr: "--max-duration"},
		{name: "no workers", args: []string{"--image", testImage, "--workers", "0"}, wantErr: "--workers"},
		{name: "bad dry run", args: []string{"--image", testImage, "--dry-run=maybe"}, wantErr: "--dry-run"},
		{name: "bad output", args: []string{"--image", testImage, "-o", "wide"}, wantErr: "--output"},
		{name: "bad name", args: []string{"--image", testImage, "--name", "Reconcile"}, wantErr: "--name"},
		{name: "argument", args: []string{"--image", testImage, "extra"}, wantErr: "takes no arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := cmdtest.RunOffline(t, append([]string{"reconcile", "install"}, tc.args...)...)
			assert.ErrorContains(t, err, tc.wantErr)
			assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
		})
	}
}

func TestUninstall_NeedsYesOutsideATerminal(t *testing.T) {
	core := fake.NewClientset()
	var out, errOut bytes.Buffer
	o := &reconcile.UninstallOptions{Namespace: install.DefaultNamespace, Name: install.DefaultName, Core: core,
		Streams: cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut)}
	err := o.Run(context.Background())
	assert.ErrorContains(t, err, "--yes")
	assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)

	// Declined at the prompt: nothing happens.
	inst := install.Defaults()
	inst.Image = testImage
	_, err = install.Apply(context.Background(), core, install.Build(inst), install.ApplyOptions{SkipEnforcementCheck: true})
	assert.NilError(t, err)
	o.Prompter = &prompt.Scripted{Answers: []string{"n"}}
	assert.NilError(t, o.Run(context.Background()))
	_, err = core.BatchV1().CronJobs(inst.Namespace).Get(context.Background(), inst.Name, metav1.GetOptions{})
	assert.NilError(t, err)

	// Confirmed: everything but the namespace goes; a second run skips what is gone.
	o.Prompter = &prompt.Scripted{Answers: []string{"y"}}
	assert.NilError(t, o.Run(context.Background()))
	assert.Assert(t, is.Contains(out.String(), "cronjob.batch/catalog-reconcile deleted\n"))
	out.Reset()
	o.Yes = true
	assert.NilError(t, o.Run(context.Background()))
	assert.Assert(t, is.Contains(out.String(), "serviceaccount/catalog-reconcile not found, skipped\n"))
}

func TestUninstall_UsageErrors(t *testing.T) {
	err := cmdtest.RunOffline(t, "reconcile", "uninstall", "--name", "Bad_Name", "--yes")
	assert.ErrorContains(t, err, "--name")
	assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
	err = cmdtest.RunOffline(t, "reconcile", "uninstall", "--remove-trust-policy", "--keep-trust-policy", "--yes")
	assert.ErrorContains(t, err, "drop --keep-trust-policy")
	assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
	// Alone, the deprecated flag is still accepted: the run goes on to the cluster, which
	// cmdtest's kubeconfig does not name.
	err = cmdtest.RunOffline(t, "reconcile", "uninstall", "--keep-trust-policy", "--yes")
	assert.Assert(t, err != nil && cmdutil.ExitCode(err) != cmdutil.ExitUsage, "%v", err)
}

type stampCounts map[string]int

func (c stampCounts) StampedCounts(ctx context.Context, namespace, token string) (map[string]int, error) {
	return c, nil
}

// The trust policy is the catalog's set-up: uninstalling reconcile keeps it and its
// token; --remove-trust-policy removes them, first saying whose records that strands.
func TestUninstall_KeepsTheTrustPolicy_RemovesItOnlyWhenAskedSayingWhatItStrands(t *testing.T) {
	ctx := context.Background()
	core := fake.NewClientset()
	inst := install.Defaults()
	inst.Image = testImage
	_, err := install.Apply(ctx, core, install.Build(inst), install.ApplyOptions{SkipEnforcementCheck: true})
	assert.NilError(t, err)
	token, err := install.CurrentToken(ctx, core, inst.TrustNamespace())
	assert.NilError(t, err)

	var out, errOut bytes.Buffer
	o := &reconcile.UninstallOptions{Namespace: inst.Namespace, Name: inst.Name, Core: core, Yes: true,
		Streams: cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut)}
	assert.NilError(t, o.Run(ctx))
	assert.Assert(t, !strings.Contains(out.String(), "catalog-trust"), out.String())
	assert.Assert(t, is.Contains(errOut.String(), "are kept"))
	kept, err := install.CurrentToken(ctx, core, inst.TrustNamespace())
	assert.NilError(t, err)
	assert.Equal(t, kept, token)

	out.Reset()
	errOut.Reset()
	o.RemoveTrustPolicy, o.Records = true, stampCounts{"team-b": 2}
	assert.NilError(t, o.Run(ctx))
	assert.Assert(t, is.Contains(errOut.String(), "It strands the records of these namespaces"))
	assert.Assert(t, is.Contains(errOut.String(), "namespace team-b: 2 records: kubectl catalog adopt -n team-b\n"))
	assert.Assert(t, is.Contains(out.String(), "configmap/catalog-trust deleted\n"))
	assert.Assert(t, is.Contains(out.String(), "validatingadmissionpolicy.admissionregistration.k8s.io/kubectl-catalog-record-author deleted\n"))
	gone, err := install.CurrentToken(ctx, core, inst.TrustNamespace())
	assert.NilError(t, err)
	assert.Equal(t, gone, "")
}

func TestInstall_ServeAndShardsInTheManifests(t *testing.T) {
	t.Setenv(cmdutil.CatalogNamespaceEnv, "")
	out, err := cmdtest.RunOfflineOutput(t, "reconcile", "install", "--image", testImage, "--dry-run=client", "--serve", "--replicas", "2", "--no-trust-policy")
	assert.NilError(t, err)
	assert.Equal(t, out, "namespace/catalog-system created (dry run)\n"+
		"serviceaccount/catalog-reconcile created (dry run)\n"+
		"clusterrole.rbac.authorization.k8s.io/kubectl-catalog:catalog-system:catalog-reconcile created (dry run)\n"+
		"clusterrolebinding.rbac.authorization.k8s.io/kubectl-catalog:catalog-system:catalog-reconcile created (dry run)\n"+
		"role.rbac.authorization.k8s.io/kubectl-catalog:catalog-system:catalog-reconcile created (dry run)\n"+
		"rolebinding.rbac.authorization.k8s.io/kubectl-catalog:catalog-system:catalog-reconcile created (dry run)\n"+
		"networkpolicy.networking.k8s.io/catalog-reconcile created (dry run)\n"+
		"deployment.apps/catalog-reconcile created (dry run)\n"+
		"poddisruptionbudget.policy/catalog-reconcile created (dry run)\n")
	out, err = cmdtest.RunOfflineOutput(t, "reconcile", "install", "--image", testImage, "--dry-run=client", "--serve", "--replicas", "3", "-o", "yaml", "--no-trust-policy")
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(out, "- --shard-group\n        - catalog-reconcile\n"), out)
	assert.Assert(t, is.Contains(out, "kind: Role\n"), out)
	assert.Assert(t, is.Contains(out, "- leases\n"), out)
	err = cmdtest.RunOffline(t, "reconcile", "install", "--image", testImage, "--dry-run=client", "--serve", "--replicas", "2", "--shards", "2")
	assert.ErrorContains(t, err, "--shards 2 and --replicas 2 cannot go together")
	assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)

	out, err = cmdtest.RunOfflineOutput(t, "reconcile", "install", "--image", testImage, "--dry-run=client", "--serve", "-o", "yaml", "--no-trust-policy")
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(out, "- --serve\n"))
	assert.Assert(t, !strings.Contains(out, "--max-duration"), "--serve bounds its runs by its own interval:\n%s", out)
	assert.Assert(t, !strings.Contains(out, "PodDisruptionBudget"), "one replica, no budget")

	out, err = cmdtest.RunOfflineOutput(t, "reconcile", "install", "--image", testImage, "--dry-run=client", "--shards", "2", "-o", "yaml", "--no-trust-policy")
	assert.NilError(t, err)
	assert.Equal(t, strings.Count(out, "kind: CronJob\n"), 2, out)
	assert.Assert(t, is.Contains(out, "- 1/2\n"))
}

// Both dry runs print complete objects, as kubectl does: each with its
// apiVersion and kind, so that the output can be applied as it is.
func TestInstall_DryRunsPrintCompleteObjects(t *testing.T) {
	for _, tc := range []struct {
		dryRun, output string
		serve          bool
	}{
		{"server", "yaml", false}, {"server", "json", false}, {"server", "yaml", true},
		{"client", "yaml", false}, {"client", "json", true},
	} {
		t.Run(fmt.Sprintf("%s %s serve=%v", tc.dryRun, tc.output, tc.serve), func(t *testing.T) {
			var out, errOut bytes.Buffer
			o := &reconcile.InstallOptions{Options: install.Defaults(), DryRun: cmdutil.DryRunStrategy(tc.dryRun), Output: installOutput(tc.output), Core: typedClientset(),
				Streams: cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut)}
			o.Image, o.Serve, o.Replicas = testImage, tc.serve, 2
			assert.NilError(t, o.Run(context.Background()))
			kinds := decodeKinds(t, out.String())
			assert.Assert(t, len(kinds) >= 5, "%v\n%s", kinds, out.String())
			assert.Assert(t, is.Contains(kinds, "v1/ServiceAccount"), "%v", kinds)
		})
	}
}

// installOutput is -o of "reconcile install" as parsed from "-o format".
func installOutput(format string) *printers.OutputFlags {
	o := printers.NewFormatOutputFlags([]string{"json", "yaml"}, "", "", nil)
	o.Output = format
	return o
}

// typedClientset is a fake clientset that, like the API server's typed
// clients, returns objects without their apiVersion and kind.
func typedClientset() *fake.Clientset {
	core := fake.NewClientset()
	react := k8stesting.ObjectReaction(core.Tracker())
	core.PrependReactor("*", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		handled, obj, err := react(action)
		if obj != nil {
			obj = obj.DeepCopyObject()
			obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		}
		return handled, obj, err
	})
	return core
}

// decodeKinds decodes a YAML or JSON stream of objects, a v1 List's items
// included, and returns their "apiVersion/kind", failing on an object that
// lacks either.
func decodeKinds(t *testing.T, out string) []string {
	t.Helper()
	var kinds []string
	check := func(obj map[string]any) {
		t.Helper()
		apiVersion, _ := obj["apiVersion"].(string)
		kind, _ := obj["kind"].(string)
		assert.Assert(t, apiVersion != "" && kind != "", "an object without apiVersion or kind: %v", obj["metadata"])
		kinds = append(kinds, apiVersion+"/"+kind)
	}
	dec := k8syaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return kinds
		}
		assert.NilError(t, err)
		if obj == nil {
			continue
		}
		if obj["kind"] == "List" {
			assert.Equal(t, obj["apiVersion"], "v1")
			items, _ := obj["items"].([]any)
			for _, item := range items {
				check(item.(map[string]any))
			}
			continue
		}
		check(obj)
	}
}
