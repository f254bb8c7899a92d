package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/doctor"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

const (
	catalogNS = storetest.CatalogNamespace
	userNS    = storetest.UserNamespace
)

// options are the options of doctor on a fake cluster where the user may do everything,
// with an engine over its store, and what was added to it with st.
func options(t *testing.T, objs ...runtime.Object) (*Options, *store.Store) {
	t.Helper()
	c := storetest.NewCluster(objs...)
	c.Core.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		sar := a.(clienttesting.CreateAction).GetObject().(*authzv1.SelfSubjectAccessReview)
		sar.Status.Allowed = true
		return true, sar, nil
	})
	c.Core.PrependReactor("create", "selfsubjectreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{UserInfo: authnv1.UserInfo{Username: "alice"}}}, nil
	})
	// The records are written as under the trust policy of token "t".
	st := c.Store(store.WithIdentity(func(context.Context) (*store.Identity, error) { return &store.Identity{Username: "alice"}, nil }),
		store.WithTrustToken(func(context.Context) (string, error) { return "t", nil }))
	eng := engine.New(engine.Config{Store: st, CatalogNamespace: catalogNS,
		Brokers: brokerclient.New(c.Core, brokerclient.WithTimeout(5*time.Second))})
	return &Options{
		BrokerTimeout: 5 * time.Second, ReconcileNamespace: install.DefaultNamespace,
		Namespace: userNS, CatalogNamespace: catalogNS, Server: "https://127.0.0.1:6443",
		Core: c.Core, Records: records.NewReader(st), Brokers: eng, Now: time.Now,
		Streams: cmdutil.NewTestIOStreams(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}),
	}, st
}

func addBroker(t *testing.T, st *store.Store, name, url string) {
	t.Helper()
	_, err := st.Brokers().Create(store.WithIntent(context.Background()), &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: catalogNS, Name: name},
		Spec:       v1alpha1.BrokerSpec{URL: url, Scope: v1alpha1.ScopeCluster},
	})
	assert.NilError(t, err)
}

func TestRun_AllWell_PrintsTheTableWithoutFixes(t *testing.T) {
	b := broker.NewTestBroker(t, broker.Options{})
	o, st := options(t, trust.Policy(), trust.Binding(), trust.TokenConfigMap(catalogNS, "t"))
	o.ReconcileName = "none"
	addBroker(t, st, "acme", b.URL())
	// Only the reconcile check warns: not installed.
	assert.NilError(t, o.Run(context.Background()))
	out := o.Streams.Out.(*bytes.Buffer).String()
	assert.Assert(t, strings.HasPrefix(out, "CHECK "), out)
	assert.Assert(t, is.Contains(out, "broker catalog-system/acme   OK "))
	assert.Assert(t, is.Contains(out, "\nTo fix:\n  reconcile: run kubectl catalog reconcile -A regularly"))
}

// A failed check: exit 1, with the fixes after the table.
func TestRun_AFailedCheck_ExitsOne(t *testing.T) {
	o, st := options(t)
	addBroker(t, st, "down", "http://127.0.0.1:1")
	err := o.Run(context.Background())
	assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitError)
	assert.Assert(t, !cmdutil.ShouldPrint(err))
	out := o.Streams.Out.(*bytes.Buffer).String()
	assert.Assert(t, is.Contains(out, "To fix:\n"))
	assert.Assert(t, is.Contains(out, "FAIL     http://127.0.0.1:1: "))
	assert.Assert(t, is.Contains(out, "  broker catalog-system/down: check the broker's URL"))
}

func TestReportOf(t *testing.T) {
	r := ReportOf([]doctor.Finding{{Object: "cluster", Severity: doctor.OK, Detail: "Kubernetes v1.37.2"},
		{Object: "reconcile", Severity: doctor.Warn, Detail: "not installed", Fix: "install it"}})
	assert.DeepEqual(t, r, Report{Checks: []Check{{Name: "cluster", Status: OK, Detail: "Kubernetes v1.37.2"},
		{Name: "reconcile", Status: Warn, Detail: "not installed", Fix: "install it"}}})
	assert.Assert(t, !r.Failed())
	assert.Assert(t, ReportOf([]doctor.Finding{{Object: "x", Severity: doctor.Fail}}).Failed())
}

func TestPrint_JSONAndYAML(t *testing.T) {
	r := Report{Checks: []Check{{Name: "cluster", Status: OK, Detail: "Kubernetes v1.37.2"}, {Name: "reconcile", Status: Warn, Detail: "not installed", Fix: "install it"}}}
	var out bytes.Buffer
	streams := cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &bytes.Buffer{})
	assert.NilError(t, Print(streams, "json", r))
	assert.Assert(t, is.Contains(out.String(), `"status": "WARN"`))
	var back Report
	assert.NilError(t, json.Unmarshal(out.Bytes(), &back))
	assert.DeepEqual(t, back, r)
	out.Reset()
	assert.NilError(t, Print(streams, "yaml", r))
	assert.Assert(t, is.Contains(out.String(), "status: WARN"))
}

// outputFlags is -o as parsed from "-o format".
func outputFlags(format string) *printers.OutputFlags {
	o := newOutputFlags()
	o.Output = format
	return o
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		err  string
	}{
		{name: "ok", o: Options{BrokerTimeout: time.Second, ReconcileNamespace: "a", ReconcileName: "b"}},
		{name: "every installation", o: Options{BrokerTimeout: time.Second, ReconcileNamespace: "a"}},
		{name: "timeout", o: Options{ReconcileNamespace: "a", ReconcileName: "b"}, err: "--broker-timeout"},
		{name: "output", o: Options{BrokerTimeout: time.Second, Output: outputFlags("wide"), ReconcileNamespace: "a", ReconcileName: "b"}, err: "--output"},
		{name: "empty namespace", o: Options{BrokerTimeout: time.Second, ReconcileName: "b"}, err: "--reconcile-namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.o
			err := tc.o.Validate()
			assert.DeepEqual(t, tc.o, before, cmpopts.IgnoreUnexported(cmdutil.IOStreams{}, printers.OutputFlags{}))
			if tc.err == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.err)
			assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
		})
	}
}

func TestDiagnose_BrokenKubeconfig_IsTheFailingCheck(t *testing.T) {
	o := Options{ConfigErr: errors.New(`cannot determine the namespace: context "nope" does not exist; ` + cmdutil.DoctorHint)}
	r := o.Diagnose(context.Background())
	assert.Equal(t, len(r.Checks), 1)
	assert.Equal(t, r.Checks[0].Name, "kubeconfig")
	assert.Equal(t, r.Checks[0].Status, Fail)
	assert.Equal(t, r.Checks[0].Detail, `cannot determine the namespace: context "nope" does not exist`)
	assert.Assert(t, r.Failed())
}

func TestDiagnose_UnreachableCluster_NamesTheServer(t *testing.T) {
	o, _ := options(t)
	o.Core.(interface {
		PrependReactor(verb, resource string, reaction clienttesting.ReactionFunc)
	}).PrependReactor("get", "version", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	r := o.Diagnose(context.Background())
	assert.Equal(t, len(r.Checks), 1)
	assert.Equal(t, r.Checks[0].Name, "cluster")
	assert.Equal(t, r.Checks[0].Detail, "cannot reach the API server https://127.0.0.1:6443: connection refused")
}

// The flags reach the options, completed on the factory's cluster.
func TestNewCmdDoctor_Flags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want func(t *testing.T, o *Options)
	}{
		{name: "defaults", want: func(t *testing.T, o *Options) {
			assert.Equal(t, o.BrokerTimeout, 10*time.Second)
			assert.Equal(t, o.Output.Format(), "")
			assert.Equal(t, o.ReconcileNamespace, install.DefaultNamespace)
			assert.Equal(t, o.ReconcileName, "")
		}},
		{name: "every flag", args: []string{"--broker-timeout", "3s", "-o", "json", "--reconcile-namespace", "ops", "--reconcile-name", "rec"},
			want: func(t *testing.T, o *Options) {
				assert.Equal(t, o.BrokerTimeout, 3*time.Second)
				assert.Equal(t, o.Output.Format(), "json")
				assert.Equal(t, o.ReconcileNamespace, "ops")
				assert.Equal(t, o.ReconcileName, "rec")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := storetest.NewCluster()
			t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
			f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}))
			f.UseClients(c.Core, c.Metadata)
			var got *Options
			cmd := NewCmdDoctor(f, func(o *Options) error { got = o; return nil })
			f.AddFlags(cmd.PersistentFlags())
			cmd.SetArgs(append([]string{"-n", userNS, "--server", "https://127.0.0.1:6443"}, tc.args...))
			assert.NilError(t, cmd.ExecuteContext(context.Background()))
			assert.Assert(t, got != nil, "runF was not called")
			tc.want(t, got)
			assert.NilError(t, got.ConfigErr)
			assert.Equal(t, got.Namespace, userNS)
			assert.Equal(t, got.CatalogNamespace, f.CatalogNamespace)
			assert.Equal(t, got.Server, "https://127.0.0.1:6443")
			assert.Assert(t, got.Records != nil && got.Brokers != nil && got.Core != nil)
		})
	}
}

// A usage error stops before the options are completed or run.
func TestNewCmdDoctor_UsageErrorDoesNotRun(t *testing.T) {
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}))
	cmd := NewCmdDoctor(f, func(*Options) error { t.Fatal("runF was called"); return nil })
	cmd.SetArgs([]string{"--broker-timeout", "0s"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.ExecuteContext(context.Background())
	assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
}
