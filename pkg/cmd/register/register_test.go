package register

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestValidate_RefusesBadInputAsUsageErrors(t *testing.T) {
	valid := func() Options {
		return Options{Broker: lifecycle.Broker{Name: "acme", URL: "https://broker.example.com", Scope: "cluster", BrokerTimeout: time.Minute}}
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{name: "valid", mutate: func(*Options) {}},
		{name: "namespace scope", mutate: func(o *Options) { o.Scope = "Namespace" }},
		{name: "restrictions", mutate: func(o *Options) { o.PlanRestrictions = []string{"free==true", "name in (a,b)"} }},
		{name: "uppercase name", mutate: func(o *Options) { o.Name = "Acme" }, wantErr: `"Acme" is not a valid broker name`},
		{name: "dotted name", mutate: func(o *Options) { o.Name = "a.b" }, wantErr: "not a valid broker name"},
		{name: "no url", mutate: func(o *Options) { o.URL = "" }, wantErr: "--url is required"},
		{name: "ftp url", mutate: func(o *Options) { o.URL = "ftp://x" }, wantErr: "must start with http:// or https://"},
		{name: "no host", mutate: func(o *Options) { o.URL = "https://" }, wantErr: "has no host"},
		{name: "credentials in url", mutate: func(o *Options) { o.URL = "https://u:p@x" }, wantErr: "must not contain credentials"},
		{name: "query", mutate: func(o *Options) { o.URL = "https://x/?a=b" }, wantErr: "must not have a query"},
		{name: "two auths", mutate: func(o *Options) { o.BasicAuthSecret, o.BearerTokenSecret = "a", "b" }, wantErr: "cannot be used together"},
		{name: "bad secret name", mutate: func(o *Options) { o.BasicAuthSecret = "No_Good" }, wantErr: `--basic-auth-secret "No_Good" is not a valid Secret name`},
		{name: "ca and insecure", mutate: func(o *Options) { o.CAFile, o.InsecureSkipTLSVerify = "ca.pem", true }, wantErr: "cannot be used together"},
		{name: "ca on http", mutate: func(o *Options) { o.URL, o.CAFile = "http://x", "ca.pem" }, wantErr: "only apply to an https URL"},
		{name: "bad scope", mutate: func(o *Options) { o.Scope = "galaxy" }, wantErr: `--scope must be cluster or namespace, not "galaxy"`},
		{name: "negative relist", mutate: func(o *Options) { o.RelistInterval = -time.Second }, wantErr: "must not be negative"},
		{name: "zero timeout", mutate: func(o *Options) { o.BrokerTimeout = 0 }, wantErr: "--broker-timeout must be positive"},
		{name: "bad rule", mutate: func(o *Options) { o.ClassRestrictions = []string{"name in (a"} }, wantErr: "is not valid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			tc.mutate(&o)
			err := o.Validate()
			if tc.wantErr == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
			assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
		})
	}
}

func TestNewCmdRegister_FlagsBecomeTheRequest(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	ca := filepath.Join(t.TempDir(), "ca.pem")
	assert.NilError(t, os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o600))
	c := storetest.NewCluster()
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}))
	f.UseClients(c.Core, c.Metadata)
	f.Getenv = func(string) string { return "" }
	team := "team"
	f.ConfigFlags.Namespace = &team
	var got *Options
	cmd := NewCmdRegister(f, func(o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"acme", "--url", "https://broker.example.com", "--scope", "namespace", "--bearer-secret", "tok",
		"--ca-file", ca, "--plan-restrictions", "free==true", "--relist-interval", "1h", "--broker-timeout", "5s", "--dry-run=server"})
	assert.NilError(t, cmd.Execute())
	assert.Assert(t, got != nil && got.Engine != nil)
	req := got.Request()
	req.Note = nil
	assert.DeepEqual(t, req, engine.RegisterBrokerRequest{Name: "acme", URL: "https://broker.example.com", Scope: v1alpha1.ScopeNamespace,
		Namespace: "team", BearerTokenSecret: "tok", CABundle: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		RelistInterval: time.Hour, PlanRestrictions: []string{"free==true"}, DryRun: engine.DryRunServer})
}

func TestValidate_DoesNotChangeTheOptions(t *testing.T) {
	o := Options{Broker: lifecycle.Broker{Name: "acme", URL: "https://broker.example.com", Scope: "cluster", BrokerTimeout: time.Minute}}
	before := o
	assert.NilError(t, o.Validate())
	assert.DeepEqual(t, o, before, cmpopts.IgnoreUnexported(Options{}))
}
