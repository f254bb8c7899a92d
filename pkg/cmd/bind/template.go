package bind

import (
	"fmt"
	"io"
	"os"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/secrettemplate"
)

// FlagSecretTemplate is the flag of a binding's secret template file.
const FlagSecretTemplate = "secret-template"

// maxTemplateFile bounds the file --secret-template reads.
const maxTemplateFile = secrettemplate.MaxKeys*secrettemplate.MaxTemplateBytes + 64<<10

// ReadSecretTemplate reads the secret template of the file path, as spec.secretTemplate
// says it in a manifest (YAML or JSON: keys, a map of Secret key to Go template, and
// only), and checks it without data. Its errors name the file and the fix.
func ReadSecretTemplate(path string) (*v1alpha1.SecretTemplate, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, cmdutil.UsageErrorf("--%s %s: %v", FlagSecretTemplate, path, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxTemplateFile+1))
	if err != nil {
		return nil, cmdutil.UsageErrorf("--%s %s: %v", FlagSecretTemplate, path, err)
	}
	if len(raw) > maxTemplateFile {
		return nil, cmdutil.UsageErrorf("--%s %s: the file is longer than %d bytes", FlagSecretTemplate, path, maxTemplateFile)
	}
	return ParseSecretTemplate("--"+FlagSecretTemplate+" "+path, raw)
}

// ParseSecretTemplate decodes raw, a secret template as YAML or JSON, strictly, and
// checks it; what names where it comes from in errors.
func ParseSecretTemplate(what string, raw []byte) (*v1alpha1.SecretTemplate, error) {
	var t v1alpha1.SecretTemplate
	if err := yaml.UnmarshalStrict(raw, &t); err != nil {
		return nil, cmdutil.UsageErrorf("%s: not a secret template (%v): write keys: {KEY: TEMPLATE, ...} and, optionally, only: true", what, strings.TrimPrefix(err.Error(), "error unmarshaling JSON: "))
	}
	if err := secrettemplate.Check(&t); err != nil {
		return nil, cmdutil.UsageErrorf("%s: %v: fix the template", what, err)
	}
	return &t, nil
}

// secretKeysLine says which keys a binding's Secret would hold, values masked: the
// rendered keys, and the broker's credentials unless the template renders only its own.
func secretKeysLine(b *v1alpha1.ServiceBinding) string {
	t := b.Spec.SecretTemplate
	if t == nil {
		return ""
	}
	var parts []string
	for _, k := range secrettemplate.Keys(t) {
		parts = append(parts, k+"="+secrettemplate.Placeholder)
	}
	rest := "the broker's credentials (as the transforms leave them), type and provider"
	if t.Only {
		rest = "type and provider"
	}
	return fmt.Sprintf("Secret %q would hold: %s (rendered by the secret template), and %s\n", b.Spec.SecretName, strings.Join(parts, ", "), rest)
}
