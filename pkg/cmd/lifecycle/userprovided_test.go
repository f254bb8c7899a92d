package lifecycle

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
)

func TestCredentialFlags_Validate_NeverQuotesAValue(t *testing.T) {
	const secret = "hunter2-in-flags"
	for _, tc := range []struct {
		name string
		f    CredentialFlags
		want string
	}{
		{"truncated JSON", CredentialFlags{JSON: `{"password":"` + secret + `"`}, "must be a JSON object of credentials"},
		{"syntax error inside a value", CredentialFlags{JSON: `{"password":` + secret + `}`}, "invalid JSON at byte"},
		{"an array", CredentialFlags{JSON: `["` + secret + `"]`}, "must be a JSON object"},
		{"two objects", CredentialFlags{JSON: `{"a":"b"} {"c":"` + secret + `"}`}, "more follows it"},
		{"empty object", CredentialFlags{JSON: `{}`}, "holds no credentials"},
		{"bad key", CredentialFlags{JSON: `{"a b":"` + secret + `"}`}, `key "a b" is not a valid Secret key`},
		{"two sources", CredentialFlags{JSON: `{"a":"b"}`, File: "x.json"}, "give the credentials once"},
		{"bad prompt key", CredentialFlags{Keys: []string{"ok", "not ok"}}, "--credentials-keys"},
		{"bad Secret name", CredentialFlags{FromSecret: "Bad_Name"}, "not a valid Secret name"},
		{"syslog scheme", CredentialFlags{SyslogDrainURL: "ftp://u:" + secret + "@logs.example"}, `the scheme must be syslog or syslog-tls or https, not "ftp"`},
		{"route service without a host", CredentialFlags{RouteServiceURL: "https:///" + secret}, "not an absolute URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.f.Validate()
			assert.ErrorContains(t, err, tc.want)
			assert.Assert(t, !strings.Contains(err.Error(), secret), err.Error())
		})
	}
}

func TestCredentialFlags_Input(t *testing.T) {
	f := CredentialFlags{JSON: `{"host":"db","port":5432,"tls":{"ca":"x"}}`}
	data, err := f.Input(nil, nil).Read()
	assert.NilError(t, err)
	assert.Equal(t, string(data["port"]), "5432")
	assert.Equal(t, string(data["tls"]), `{"ca":"x"}`)

	f = CredentialFlags{File: "-"}
	data, err = f.Input(strings.NewReader(`{"password":"p"}`), nil).Read()
	assert.NilError(t, err)
	assert.Equal(t, string(data["password"]), "p")

	p := &prompt.Scripted{Answers: []string{"app", "s3cret"}}
	f = CredentialFlags{Keys: []string{"username", "password"}}
	in := f.Input(nil, p)
	assert.DeepEqual(t, p.Asked, []string(nil))
	data, err = in.Read()
	assert.NilError(t, err)
	assert.DeepEqual(t, p.Asked, []string{"Credential username:", "Credential password:"})
	assert.Equal(t, string(data["password"]), "s3cret")

	_, err = f.Input(nil, nil).Read()
	assert.ErrorContains(t, err, "asks for each value in a terminal")

	f = CredentialFlags{FromSecret: "db-creds", SyslogDrainURL: "syslog://logs.example:514"}
	in = f.Input(nil, nil)
	assert.Assert(t, in.Read == nil, "the engine reads the Secret")
	assert.Check(t, is.Equal(in.FromSecret, "db-creds"))
	assert.Check(t, is.Equal(in.SyslogDrainURL, "syslog://logs.example:514"))
}
