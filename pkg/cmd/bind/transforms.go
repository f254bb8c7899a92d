package bind

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// Flag names of TransformFlags.
const (
	FlagRenameKey         = "rename-key"
	FlagAddKey            = "add-key"
	FlagAddKeysFromSecret = "add-keys-from-secret"
	FlagRemoveKey         = "remove-key"
)

// TransformFlags are the command-line flags that build a binding's SecretTransforms. The
// four flags are repeatable and may be mixed; the transforms are in the order the flags
// are given on the command line, which is the order they are applied in:
//
//	--rename-key username=user --add-key type=postgresql --remove-key uri
//
// Each value is checked as it is parsed, so a malformed one fails the command before
// anything is done. The zero value is ready to use.
type TransformFlags struct {
	transforms []v1alpha1.SecretTransform
}

// AddFlags registers --rename-key, --add-key, --add-keys-from-secret and --remove-key on
// fs.
func (f *TransformFlags) AddFlags(fs *pflag.FlagSet) {
	const repeat = " Repeatable; the key flags apply in command-line order."
	fs.Var(f.value(FlagRenameKey, parseRenameKey), FlagRenameKey,
		"Rename a credentials key, as `FROM=TO`; an existing key TO is replaced."+repeat)
	fs.Var(f.value(FlagAddKey, parseAddKey), FlagAddKey,
		"Add a credentials key with a literal value, as `KEY=VALUE`; an existing key KEY is replaced."+repeat)
	fs.Var(f.value(FlagAddKeysFromSecret, parseAddKeysFromSecret), FlagAddKeysFromSecret,
		"Copy every key of the Secret `NAME`, in the binding's namespace, into the credentials; existing keys are replaced."+repeat)
	fs.Var(f.value(FlagRemoveKey, parseRemoveKey), FlagRemoveKey,
		"Remove the credentials key `KEY`; a key that is not there is ignored."+repeat)
}

// Transforms returns the transforms given on the command line, in order; nil when none
// was.
func (f *TransformFlags) Transforms() []v1alpha1.SecretTransform {
	if len(f.transforms) == 0 {
		return nil
	}
	out := make([]v1alpha1.SecretTransform, len(f.transforms))
	for i, t := range f.transforms {
		out[i] = *t.DeepCopy()
	}
	return out
}

func (f *TransformFlags) value(flag string, parse func(string) (v1alpha1.SecretTransform, error)) *transformValue {
	return &transformValue{flag: flag, parse: parse, into: &f.transforms}
}

// transformValue is the pflag.Value of one of the flags. Each Set appends to the list
// shared by the four flags, so the list keeps the command-line order across them.
type transformValue struct {
	flag  string
	parse func(string) (v1alpha1.SecretTransform, error)
	into  *[]v1alpha1.SecretTransform
	given []string
}

var _ pflag.Value = &transformValue{}

func (v *transformValue) Set(s string) error {
	t, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.into = append(*v.into, t)
	v.given = append(v.given, s)
	return nil
}

// String is the values given to this flag, as pflag's string arrays print them; empty
// when there are none, so that help shows no default.
func (v *transformValue) String() string {
	if len(v.given) == 0 {
		return ""
	}
	return "[" + strings.Join(v.given, ",") + "]"
}

func (v *transformValue) Type() string { return "stringArray" }

// flagError is a malformed flag value: the flag, the value, what is wrong and an
// example of a correct one.
func flagError(flag, value, problem, example string) error {
	return fmt.Errorf("--%s %q: %s; for example --%s %s", flag, value, problem, flag, example)
}

func parseRenameKey(s string) (v1alpha1.SecretTransform, error) {
	const example = "username=user"
	from, to, err := splitPair(FlagRenameKey, s, "FROM=TO", example)
	if err != nil {
		return v1alpha1.SecretTransform{}, err
	}
	for _, k := range []string{from, to} {
		if err := keyFlagError(FlagRenameKey, s, k, example); err != nil {
			return v1alpha1.SecretTransform{}, err
		}
	}
	return v1alpha1.SecretTransform{RenameKey: &v1alpha1.RenameKeyTransform{From: from, To: to}}, nil
}

func parseAddKey(s string) (v1alpha1.SecretTransform, error) {
	const example = "type=postgresql"
	key, value, err := splitPair(FlagAddKey, s, "KEY=VALUE", example)
	if err != nil {
		return v1alpha1.SecretTransform{}, err
	}
	if err := keyFlagError(FlagAddKey, s, key, example); err != nil {
		return v1alpha1.SecretTransform{}, err
	}
	return v1alpha1.SecretTransform{AddKey: &v1alpha1.AddKeyTransform{Key: key, StringValue: &value}}, nil
}

func parseAddKeysFromSecret(s string) (v1alpha1.SecretTransform, error) {
	if errs := validation.IsDNS1123Subdomain(s); len(errs) > 0 {
		return v1alpha1.SecretTransform{}, flagError(FlagAddKeysFromSecret, s,
			"not a valid Secret name: "+strings.Join(errs, "; "), "db-extra-settings")
	}
	return v1alpha1.SecretTransform{AddKeysFrom: &v1alpha1.AddKeysFromTransform{SecretRef: v1alpha1.SecretReference{Name: s}}}, nil
}

func parseRemoveKey(s string) (v1alpha1.SecretTransform, error) {
	if err := keyFlagError(FlagRemoveKey, s, s, "uri"); err != nil {
		return v1alpha1.SecretTransform{}, err
	}
	return v1alpha1.SecretTransform{RemoveKey: &v1alpha1.RemoveKeyTransform{Key: s}}, nil
}

// splitPair splits s at its first "=" into two non-empty halves.
func splitPair(flag, s, form, example string) (string, string, error) {
	a, b, ok := strings.Cut(s, "=")
	switch {
	case !ok:
		return "", "", flagError(flag, s, "expected "+form+" with an \"=\"", example)
	case a == "":
		return "", "", flagError(flag, s, "expected "+form+", the part before \"=\" is empty", example)
	case b == "":
		return "", "", flagError(flag, s, "expected "+form+", the part after \"=\" is empty", example)
	}
	return a, b, nil
}

// keyFlagError is an error when key, part of the value s of flag, is not a valid Secret
// key.
func keyFlagError(flag, s, key, example string) error {
	if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
		return flagError(flag, s, fmt.Sprintf("%q is not a valid Secret key: %s", key, strings.Join(errs, "; ")), example)
	}
	return nil
}
