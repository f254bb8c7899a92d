package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// snapshot is every ConfigMap and Secret of the cluster with its resourceVersion.
func (f *fixture) snapshot() map[string]string {
	f.t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	cms, err := f.cluster.Core.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	assert.NilError(f.t, err)
	for _, cm := range cms.Items {
		out["configmap "+cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	secrets, err := f.cluster.Core.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	assert.NilError(f.t, err)
	for _, s := range secrets.Items {
		out["secret "+s.Namespace+"/"+s.Name] = s.ResourceVersion
	}
	return out
}

// assertUnchanged checks that the cluster holds what before was, and that no broker
// was called.
func (f *fixture) assertUnchanged(before map[string]string) {
	f.t.Helper()
	assert.DeepEqual(f.t, f.snapshot(), before)
	assert.Assert(f.t, is.Len(f.broker.Calls(), 0))
}

// assertRefused checks that err says want, is an input error when input is, and that
// nothing changed since before.
func (f *fixture) assertRefused(err error, want string, input bool, before map[string]string) {
	f.t.Helper()
	assert.ErrorContains(f.t, err, want)
	assert.Equal(f.t, isInputError(err), input, "%v", err)
	f.assertUnchanged(before)
}

func int32p(v int32) *int32 { return &v }

func TestProvision_RecordsWithLimitsAndDrives(t *testing.T) {
	f := newFixture(t)
	var said notes

	res, err := f.engine.Provision(context.Background(), ProvisionRequest{
		Namespace: ns, Name: "db", Class: "db", Plan: "small",
		Limits: Limits{MaxBindings: int32p(3), AllowedNamespaces: &[]string{"b", " a", "b", ""}},
		Follow: said.follow(false),
	})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Assert(t, res.DryRun == nil)
	assert.DeepEqual(t, []string(said), []string{`Provisioning instance "db" of db/small in namespace "dev"...`})
	inst := f.get("db")
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	assert.Equal(t, *inst.Spec.MaxBindings, int32(3))
	assert.DeepEqual(t, inst.Spec.AllowedNamespaces, []string{"a", "b"})
	assert.Assert(t, is.Len(f.broker.Calls(), 1))
}

func TestProvision_NameTaken_SaysSoAndChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  ProvisionRequest
	}{
		{name: "checked first when asking", req: ProvisionRequest{Ask: answers{}}},
		{name: "checked first by a client dry run", req: ProvisionRequest{DryRun: DryRunClient}},
		{name: "found by the create", req: ProvisionRequest{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.provisioned("db", planSmall, "")
			before := f.snapshot()
			req := tc.req
			req.Namespace, req.Name, req.Class, req.Plan = ns, "db", "db", "small"

			_, err := f.engine.Provision(context.Background(), req)

			assert.Error(t, err, `instance "db" already exists in namespace "dev": see it with "kubectl catalog describe instance db -n dev", wait for what is under way on it with "kubectl catalog wait instance/db --for=condition=Ready -n dev", or pick another name`)
			f.assertUnchanged(before)
		})
	}
}

func TestProvision_BadInput_ChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		req   ProvisionRequest
		want  string
		input bool
	}{
		{name: "negative limit", req: ProvisionRequest{Class: "db", Plan: "small", Limits: Limits{MaxBindings: int32p(-1)}}, want: "--max-bindings must be 0", input: true},
		{name: "no class, no terminal", req: ProvisionRequest{}, want: "--class is required", input: true},
		{name: "unknown plan", req: ProvisionRequest{Class: "db", Plan: "huge"}, want: "huge"},
		{name: "parameters not an object", req: ProvisionRequest{Class: "db", Plan: "small", Parameters: ParametersInput{Object: []byte(`[1]`)}}, want: "JSON object", input: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			before := f.snapshot()
			req := tc.req
			req.Namespace, req.Name = ns, "db"

			_, err := f.engine.Provision(context.Background(), req)

			f.assertRefused(err, tc.want, tc.input, before)
		})
	}
}

func TestProvision_DryRun_WritesNothingAndCallsNoBroker(t *testing.T) {
	for _, tc := range []struct {
		mode    DryRun
		dryRuns int
	}{{DryRunClient, 0}, {DryRunServer, 1}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			f := newFixture(t)
			before := f.snapshot()
			var said notes

			res, err := f.engine.Provision(context.Background(), ProvisionRequest{
				Namespace: ns, Name: "db", Class: "db", Plan: "small", Limits: Limits{MaxBindings: int32p(2)},
				DryRun: tc.mode, Follow: said.follow(false),
			})

			assert.NilError(t, err)
			assert.Equal(t, res.Summary, `instance "db" of db/small would be provisioned in namespace "dev"`)
			assert.Equal(t, res.DryRun.Spec.PlanID, planSmall)
			assert.Equal(t, *res.DryRun.Spec.MaxBindings, int32(2))
			assert.Assert(t, is.Len(said, 0))
			assert.Equal(t, f.cluster.DryRuns(), tc.dryRuns)
			f.assertUnchanged(before)
		})
	}
}

func TestProvisionUserProvided_RecordsWritesCredentialsAndSettles(t *testing.T) {
	f := newFixture(t)
	var said notes

	res, err := f.engine.ProvisionUserProvided(context.Background(), UserProvidedRequest{
		Namespace: ns, Name: "db",
		Credentials: CredentialsInput{
			Read:           func() (map[string][]byte, error) { return toBytes(map[string]string{"password": upsPassword}), nil },
			SyslogDrainURL: "syslog-tls://logs.example:6514",
		},
		Limits: Limits{MaxBindings: int32p(1)},
		Follow: said.follow(false),
	})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.DeepEqual(t, []string(said), []string{`Recording user-provided instance "db" in namespace "dev" (credentials: password, syslog_drain_url)...`})
	inst := f.get("db")
	assert.Assert(t, inst.IsUserProvided())
	assert.Equal(t, *inst.Spec.MaxBindings, int32(1))
	data := f.secretData(CredentialsSecretName("db"))
	assert.Equal(t, string(data["password"]), upsPassword)
	assert.Equal(t, string(data["syslog_drain_url"]), "syslog-tls://logs.example:6514")
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
	f.assertNoValueInRecords(upsPassword)
}

func TestProvisionUserProvided_FromSecret_CopiesEveryKey(t *testing.T) {
	f := newFixture(t)
	f.putSecret("src", map[string]string{"host": "db.internal", "password": upsPassword})

	_, err := f.engine.ProvisionUserProvided(context.Background(), UserProvidedRequest{
		Namespace: ns, Name: "db", Credentials: CredentialsInput{FromSecret: "src"},
	})

	assert.NilError(t, err)
	data := f.secretData(CredentialsSecretName("db"))
	assert.Equal(t, string(data["host"]), "db.internal")
	assert.Equal(t, string(data["password"]), upsPassword)
}

func TestProvisionUserProvided_BadInput_ChangesNothing(t *testing.T) {
	read := func(m map[string]string) func() (map[string][]byte, error) {
		return func() (map[string][]byte, error) { return toBytes(m), nil }
	}
	for _, tc := range []struct {
		name  string
		setup func(*fixture)
		creds CredentialsInput
		want  string
		input bool
	}{
		{name: "no credentials", want: "--user-provided needs its credentials", input: true},
		{name: "name taken", setup: func(f *fixture) { f.provisioned("db", planSmall, "") },
			creds: CredentialsInput{Read: func() (map[string][]byte, error) { panic("the credentials are asked for after the name check") }},
			want:  `instance "db" already exists in namespace "dev"`},
		{name: "Secret missing", creds: CredentialsInput{FromSecret: "src"}, want: `--credentials-from-secret: Secret "src" not found in namespace "dev"`},
		{name: "Secret empty", setup: func(f *fixture) { f.putSecret("src", map[string]string{}) },
			creds: CredentialsInput{FromSecret: "src"}, want: `--credentials-from-secret: Secret "src" in namespace "dev" holds no keys`},
		{name: "reading fails", creds: CredentialsInput{Read: func() (map[string][]byte, error) { return nil, errors.New("--credentials-file: no such file") }},
			want: "no such file"},
		{name: "a URL given twice", creds: CredentialsInput{Read: read(map[string]string{"syslog_drain_url": "x"}), SyslogDrainURL: "syslog://logs.example"},
			want: `the credentials have a key "syslog_drain_url" already`, input: true},
		{name: "the credentials Secret's name is taken", setup: func(f *fixture) { f.putSecret("db-credentials", map[string]string{"a": "b"}) },
			creds: CredentialsInput{Read: read(map[string]string{"a": "b"})},
			want:  `Secret "db-credentials" already exists in namespace "dev", and the credentials of user-provided instance "db" are kept under that name`},
		{name: "negative limit", creds: CredentialsInput{FromSecret: "src"}, want: "--max-bindings must be 0", input: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			before := f.snapshot()
			req := UserProvidedRequest{Namespace: ns, Name: "db", Credentials: tc.creds}
			if tc.name == "negative limit" {
				req.Limits.MaxBindings = int32p(-1)
			}

			_, err := f.engine.ProvisionUserProvided(context.Background(), req)

			f.assertRefused(err, tc.want, tc.input, before)
		})
	}
}

func TestProvisionUserProvided_DryRun_WritesNeitherRecordNorSecret(t *testing.T) {
	for _, tc := range []struct {
		mode    DryRun
		dryRuns int
	}{{DryRunClient, 0}, {DryRunServer, 1}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			f := newFixture(t)
			before := f.snapshot()

			res, err := f.engine.ProvisionUserProvided(context.Background(), UserProvidedRequest{
				Namespace: ns, Name: "db", DryRun: tc.mode,
				Credentials: CredentialsInput{Read: func() (map[string][]byte, error) { return toBytes(map[string]string{"password": upsPassword}), nil }},
			})

			assert.NilError(t, err)
			assert.Equal(t, res.Summary, `user-provided instance "db" would be recorded in namespace "dev", its credentials (password) in Secret "db-credentials"`)
			assert.Equal(t, res.DryRun.Spec.UserProvided.CredentialsSecret, "db-credentials")
			assert.Equal(t, f.cluster.DryRuns(), tc.dryRuns)
			f.assertUnchanged(before)
		})
	}
}

func TestProvisionUserProvided_CredentialsNotWritten_RemovesTheRecord(t *testing.T) {
	f := newFixture(t)
	f.cluster.Core.PrependReactor("create", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("admission webhook said no")
	})
	before := f.snapshot()

	_, err := f.engine.ProvisionUserProvided(context.Background(), UserProvidedRequest{
		Namespace: ns, Name: "db",
		Credentials: CredentialsInput{Read: func() (map[string][]byte, error) { return toBytes(map[string]string{"password": upsPassword}), nil }},
	})

	assert.ErrorContains(t, err, `instance "db" not provisioned: its credentials could not be written to Secret "db-credentials"`)
	assert.ErrorContains(t, err, "admission webhook said no")
	assert.Assert(t, !strings.Contains(err.Error(), upsPassword))
	_, gerr := f.st.Instances().Get(context.Background(), ns, "db")
	assert.Assert(t, store.IsNotFound(gerr), "%v", gerr)
	f.assertUnchanged(before)
}
