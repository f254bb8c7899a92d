package secrettemplate

import (
	"errors"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

func data() Data {
	return Data{
		Credentials: map[string]any{
			"username": "app", "password": "s3cr3t p@ss/word", "host": "db.example", "port": float64(5432),
			"database": "appdb", "hosts": []any{"a.example", "b.example"}, "tls": map[string]any{"ca": "Q0EK"},
			"encoded": "aGVsbG8=", "flag": false,
		},
		Instance: Instance{Name: "db", Namespace: "dev", Class: "postgresql", Plan: "standard", ID: "iid"},
		Binding:  Binding{Name: "web-db", Namespace: "dev", SecretName: "web-db-secret", ID: "bid"},
	}
}

func tpl(keys map[string]string) *v1alpha1.SecretTemplate {
	return &v1alpha1.SecretTemplate{Keys: keys}
}

func TestRender(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"database url", `postgres://{{ userinfo .credentials.username .credentials.password }}@{{ .credentials.host }}:{{ .credentials.port }}/{{ .credentials.database }}?sslmode=require`,
			"postgres://app:s3cr3t%20p%40ss%2Fword@db.example:5432/appdb?sslmode=require"},
		{"instance and binding", `{{ .instance.name }}/{{ .instance.namespace }}/{{ .instance.class }}/{{ .instance.plan }}/{{ .instance.id }} {{ .binding.name }}/{{ .binding.namespace }}/{{ .binding.secretName }}/{{ .binding.id }}`,
			"db/dev/postgresql/standard/iid web-db/dev/web-db-secret/bid"},
		{"b64enc", `{{ b64enc .credentials.username }}`, "YXBw"},
		{"b64dec", `{{ b64dec .credentials.encoded }}`, "hello"},
		{"toJson", `{{ toJson .credentials.tls }}`, `{"ca":"Q0EK"}`},
		{"default of a missing key", `{{ index .credentials "missing" | default "x" }}`, "x"},
		{"default of false", `{{ .credentials.flag | default "on" }}`, "on"},
		{"default keeps a value", `{{ .credentials.host | default "x" }}`, "db.example"},
		{"join", `{{ join "," .credentials.hosts }}`, "a.example,b.example"},
		{"quote", `{{ quote .credentials.host }}`, `"db.example"`},
		{"urlquery", `{{ urlquery .credentials.password }}`, "s3cr3t+p%40ss%2Fword"},
		{"pathescape", `{{ pathescape .credentials.password }}`, "s3cr3t%20p@ss%2Fword"},
		{"lower upper trim", `{{ upper .instance.name }}{{ lower "AB" }}{{ trim "  c " }}`, "DBabc"},
		{"range over a field", `{{ range $i, $h := .credentials.hosts }}{{ if $i }};{{ end }}{{ $h }}{{ end }}`, "a.example;b.example"},
		{"range over the dot", `{{ with .credentials.hosts }}{{ range . }}[{{ . }}]{{ end }}{{ end }}`, "[a.example][b.example]"},
		{"nested object", `{{ .credentials.tls.ca }}`, "Q0EK"},
		{"printf", `{{ printf "%s:%v" .credentials.host .credentials.port }}`, "db.example:5432"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Render(tpl(map[string]string{"K": tc.src}), data())
			assert.NilError(t, err)
			assert.Equal(t, string(out["K"]), tc.want)
		})
	}
}

func TestApply(t *testing.T) {
	base := map[string][]byte{"host": []byte("db.example"), "uri": []byte("u")}
	st := tpl(map[string]string{"DATABASE_URL": "x{{ .credentials.host }}", "uri": "replaced"})
	out, err := Apply(st, base, data())
	assert.NilError(t, err)
	assert.DeepEqual(t, out, map[string][]byte{"host": []byte("db.example"), "uri": []byte("replaced"), "DATABASE_URL": []byte("xdb.example")})
	assert.Equal(t, string(base["uri"]), "u", "data is not modified")

	st.Only = true
	out, err = Apply(st, base, data())
	assert.NilError(t, err)
	assert.DeepEqual(t, out, map[string][]byte{"uri": []byte("replaced"), "DATABASE_URL": []byte("xdb.example")})

	out, err = Apply(nil, base, data())
	assert.NilError(t, err)
	assert.DeepEqual(t, out, base)
}

func TestCheckRefuses(t *testing.T) {
	long := strings.Repeat("a", MaxTemplateBytes+1)
	many := map[string]string{}
	for i := range MaxKeys + 1 {
		many["k"+strings.Repeat("x", i)] = "v"
	}
	for _, tc := range []struct {
		name string
		t    *v1alpha1.SecretTemplate
		want string
	}{
		{"no keys", tpl(nil), "has no keys"},
		{"too many keys", tpl(many), "more than the 64"},
		{"invalid key", tpl(map[string]string{"a/b": "x"}), `key "a/b": not a valid Secret key`},
		{"too long", tpl(map[string]string{"K": long}), `key "K": the template is 8193 bytes`},
		{"does not parse", tpl(map[string]string{"K": "{{ .credentials.host "}), `key "K": the template does not parse: line 1`},
		{"unknown function", tpl(map[string]string{"K": `{{ env "HOME" }}`}), `function "env" not defined`},
		{"no file function", tpl(map[string]string{"K": `{{ readFile "/etc/passwd" }}`}), `function "readFile" not defined`},
		{"define", tpl(map[string]string{"K": `{{ define "x" }}a{{ end }}b`}), "{{define}} and {{block}} are not allowed"},
		{"block", tpl(map[string]string{"K": `{{ block "x" . }}a{{ end }}`}), "not allowed"},
		{"template call", tpl(map[string]string{"K": `{{ template "K" . }}`}), `{{template "K"}} is not allowed`},
		{"range over an integer", tpl(map[string]string{"K": `{{ range 1000000000 }}{{ end }}`}), "{{range 1000000000}} is not allowed"},
		{"range over a variable", tpl(map[string]string{"K": `{{ $n := 100 }}{{ range $n }}{{ end }}`}), "is not allowed"},
		{"range over a call", tpl(map[string]string{"K": `{{ range len .credentials }}{{ end }}`}), "is not allowed"},
		{"nested range", tpl(map[string]string{"K": `{{ range .credentials.hosts }}{{ range $.credentials.hosts }}{{ end }}{{ end }}`}), "inside another {{range}}"},
		{"nested range in if", tpl(map[string]string{"K": `{{ range .credentials.hosts }}{{ if . }}{{ range $.credentials.hosts }}{{ end }}{{ end }}{{ end }}`}), "inside another {{range}}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.t)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	assert.NilError(t, Check(nil))
}

func TestRenderErrorsNameTheKeyNotTheValue(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"missing credential", `{{ .credentials.uri }}`, `map has no entry for key "uri"`},
		{"not base64", `{{ b64dec .credentials.password }}`, "b64dec: the value is not standard base64"},
		{"join of a string", `{{ join "," .credentials.password }}`, "join: the value is a string, not a list"},
		{"field of a string", `{{ .credentials.password.x }}`, "DATABASE_URL"},
		{"index out of range", `{{ index .credentials.hosts 5 }}`, "index out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(tpl(map[string]string{"DATABASE_URL": tc.src}), data())
			var ke *KeyError
			assert.Assert(t, errors.As(err, &ke), "%v", err)
			assert.Equal(t, ke.Key, "DATABASE_URL")
			assert.ErrorContains(t, err, tc.want)
			for _, v := range []string{"s3cr3t", "a.example", "db.example"} {
				assert.Assert(t, !strings.Contains(err.Error(), v), "the error shows a value: %v", err)
			}
		})
	}
}

func TestRenderBounds(t *testing.T) {
	big := strings.Repeat("x", 60<<10)
	d := data()
	d.Credentials["big"] = big
	_, err := Render(tpl(map[string]string{"K": `{{ .credentials.big }}{{ .credentials.big }}`}), d)
	assert.ErrorContains(t, err, `key "K": the rendered value is longer than 65536 bytes`)

	keys := map[string]string{}
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		keys[k] = `{{ .credentials.big }}`
	}
	_, err = Render(tpl(keys), d)
	assert.ErrorContains(t, err, `key "e": the rendered value is longer`)

	// printf's width is bounded by fmt, and what it makes by the cap.
	_, err = Render(tpl(map[string]string{"K": `{{ printf "%999999d" 1 }}`}), d)
	assert.ErrorContains(t, err, "longer than")
}

func TestCheckWith(t *testing.T) {
	d := data()
	d.Credentials = nil
	ok := []string{
		`postgres://{{ userinfo .credentials.username .credentials.password }}@{{ .credentials.host }}`,
		`{{ b64dec .credentials.encoded }}`,
		`{{ join "," .credentials.hosts }}`,
		`{{ index .credentials.hosts 0 }}`,
		`{{ range .credentials.hosts }}{{ .x }}{{ end }}`,
		`{{ with .credentials.tls }}{{ .ca }}{{ end }}`,
		`{{ .instance.name }}`,
	}
	for _, src := range ok {
		assert.NilError(t, CheckWith(tpl(map[string]string{"K": src}), []string{"username", "password", "host"}, d), src)
	}
	for _, tc := range []struct{ src, want string }{
		{`{{ .instance.nme }}`, `map has no entry for key "nme"`},
		{`{{ .binding.secret }}`, `map has no entry for key "secret"`},
		{`{{ b64enc }}`, "wrong number of args"},
	} {
		err := CheckWith(tpl(map[string]string{"K": tc.src}), nil, d)
		assert.Check(t, is.ErrorContains(err, tc.want), tc.src)
	}
}
