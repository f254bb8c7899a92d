package cmdutil

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"gotest.tools/v3/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: dev
  user: {token: abc}
contexts:
- name: x
  context: {cluster: c, user: dev}
current-context: x
`

func testFactory(t *testing.T) *Factory {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config")
	assert.NilError(t, os.WriteFile(path, []byte(testKubeconfig), 0o600))
	t.Setenv("KUBECONFIG", path)
	return NewFactory(NewTestIOStreams(nil, nil, nil))
}

func TestExplainClusterError(t *testing.T) {
	f := testFactory(t)
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:1/api/v1/namespaces/default/configmaps?labelSelector=catalog.kubectl-catalog.io%2Fkind",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{name: "refused", err: fmt.Errorf("listing instances: %w", refused),
			want: `cannot reach the cluster at https://127.0.0.1:1 (context "x"): connection refused; run "kubectl catalog doctor"`},
		{name: "unknown host", err: &url.Error{Op: "Get", URL: "https://nosuch:6443/api", Err: &net.DNSError{Name: "nosuch", Err: "no such host"}},
			want: `cannot reach the cluster at https://127.0.0.1:1 (context "x"): unknown host "nosuch"; run "kubectl catalog doctor"`},
		{name: "401", err: apierrors.NewUnauthorized("Unauthorized"),
			want: `the cluster at https://127.0.0.1:1 (context "x") does not accept the credentials of user "dev" (401 Unauthorized): they are missing, wrong or expired; run "kubectl catalog doctor"`},
		{name: "403", err: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New(`User "alice" cannot list resource "configmaps" in API group "" in the namespace "default"`)),
			want: `configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default"; the cluster at https://127.0.0.1:1 (context "x") refused it for user "alice" (403 Forbidden); run "kubectl catalog doctor"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := f.ExplainClusterError(tc.err)
			assert.Error(t, got, tc.want)
			assert.Assert(t, errors.Is(got, tc.err), "the cause is kept")
			assert.Equal(t, ExitCode(got), ExitError)
		})
	}
	for _, err := range []error{nil, errors.New("instance \"db\" not found"), UsageErrorf("bad flag"), apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "x")} {
		assert.Equal(t, f.ExplainClusterError(err), err, "%v is left as it is", err)
	}
}

func TestExplainClusterError_FlagsWin(t *testing.T) {
	f := testFactory(t)
	server, ctx, user := "https://10.0.0.1:6443", "x", "bob"
	f.ConfigFlags.APIServer, f.ConfigFlags.Context, f.ConfigFlags.AuthInfoName = &server, &ctx, &user
	err := f.ExplainClusterError(apierrors.NewUnauthorized("Unauthorized"))
	assert.ErrorContains(t, err, `the cluster at https://10.0.0.1:6443 (context "x") does not accept the credentials of user "bob"`)
}

func TestCheckServerFlag(t *testing.T) {
	f := testFactory(t)
	for v, want := range map[string]string{
		"":                      "",
		"https://10.0.0.1:6443": "",
		"10.0.0.1:6443":         "",
		"mysecret[params]":      `for parameters from a Secret use --params-from-secret mysecret/params`,
		"db-secrets[]":          `use --params-from-secret db-secrets`,
	} {
		f.ConfigFlags.APIServer = &v
		err := f.CheckServerFlag()
		if want == "" {
			assert.NilError(t, err, v)
			continue
		}
		assert.ErrorContains(t, err, want)
		assert.ErrorContains(t, err, "-s is kubectl's --server")
		assert.Equal(t, ExitCode(err), ExitUsage)
	}
}
