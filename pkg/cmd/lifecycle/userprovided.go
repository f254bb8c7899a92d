package lifecycle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/credentials"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
)

// CredentialFlags are the credentials of a user-provided instance, for provision and
// update: one of --credentials-json, --credentials-file, --credentials-from-secret and
// --credentials-keys (asked for in a terminal, without echo), plus --syslog-drain-url
// and --route-service-url. Values are never printed, and never kept in a record.
type CredentialFlags struct {
	JSON            string
	File            string
	FromSecret      string
	Keys            []string
	SyslogDrainURL  string
	RouteServiceURL string
}

// AddFlags adds the flags to fs.
func (c *CredentialFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.JSON, "credentials-json", "", "User-provided: the credentials as a JSON object (strings kept as they are, other values as JSON).")
	fs.StringVar(&c.File, "credentials-file", "", `User-provided: the credentials from a file holding a JSON object ("-" for standard input).`)
	fs.StringVar(&c.FromSecret, "credentials-from-secret", "", "User-provided: the credentials are every key of this Secret of the namespace (copied; the Secret is not changed).")
	fs.StringSliceVar(&c.Keys, "credentials-keys", nil, "User-provided: ask for these credentials one by one in a terminal, without echo (comma-separated keys).")
	fs.StringVar(&c.SyslogDrainURL, "syslog-drain-url", "", "User-provided: a syslog drain URL, given to bindings as the credential syslog_drain_url.")
	fs.StringVar(&c.RouteServiceURL, "route-service-url", "", "User-provided: a route service URL (https), given to bindings as the credential route_service_url.")
}

// Sources counts the credential sources given.
func (c *CredentialFlags) Sources() int {
	n := 0
	for _, given := range []bool{c.JSON != "", c.File != "", c.FromSecret != "", len(c.Keys) > 0} {
		if given {
			n++
		}
	}
	return n
}

// Given reports whether any of the flags was given.
func (c *CredentialFlags) Given() bool {
	return c.Sources() > 0 || c.SyslogDrainURL != "" || c.RouteServiceURL != ""
}

// Validate checks what can be checked without I/O.
func (c *CredentialFlags) Validate() error {
	if c.Sources() > 1 {
		return cmdutil.UsageErrorf("give the credentials once: --credentials-json, --credentials-file, --credentials-from-secret and --credentials-keys cannot go together")
	}
	for _, k := range c.Keys {
		if err := validKey(k); err != nil {
			return cmdutil.UsageErrorf("--credentials-keys: %v", err)
		}
	}
	if c.FromSecret != "" {
		if errs := validation.IsDNS1123Subdomain(c.FromSecret); len(errs) > 0 {
			return cmdutil.UsageErrorf("--credentials-from-secret: %q is not a valid Secret name: %s", c.FromSecret, strings.Join(errs, "; "))
		}
	}
	if c.SyslogDrainURL != "" {
		if err := checkURL(c.SyslogDrainURL, "syslog", "syslog-tls", "https"); err != nil {
			return cmdutil.UsageErrorf("--syslog-drain-url: %v", err)
		}
	}
	if c.RouteServiceURL != "" {
		if err := checkURL(c.RouteServiceURL, "https"); err != nil {
			return cmdutil.UsageErrorf("--route-service-url: %v", err)
		}
	}
	if c.JSON != "" {
		if _, err := decodeCredentials([]byte(c.JSON), "--credentials-json"); err != nil {
			return cmdutil.UsageErrorf("%v", err)
		}
	}
	return nil
}

// checkURL accepts an absolute URL of one of schemes. The URL itself is never quoted:
// it may carry a password.
func checkURL(s string, schemes ...string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("not an absolute URL with a host (scheme %s)", strings.Join(schemes, ", "))
	}
	if !slices.Contains(schemes, u.Scheme) {
		return fmt.Errorf("the scheme must be %s, not %q", strings.Join(schemes, " or "), u.Scheme)
	}
	return nil
}

func validKey(k string) error {
	if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
		return fmt.Errorf("key %q is not a valid Secret key: %s", k, strings.Join(errs, "; "))
	}
	return nil
}

// decodeCredentials parses a JSON object of credentials. Errors name where it came from
// and never quote the input.
func decodeCredentials(raw []byte, from string) (map[string][]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var creds map[string]any
	if err := dec.Decode(&creds); err != nil || creds == nil {
		return nil, fmt.Errorf("%s must be a JSON object of credentials, like {\"username\":\"app\",\"password\":\"...\"}: %s", from, jsonProblem(err))
	}
	if dec.More() {
		return nil, fmt.Errorf("%s must hold one JSON object of credentials; more follows it", from)
	}
	if len(creds) == 0 {
		return nil, fmt.Errorf("%s holds no credentials: give at least one key", from)
	}
	for k := range creds {
		if err := validKey(k); err != nil {
			return nil, fmt.Errorf("%s: %v", from, err)
		}
	}
	data, err := credentials.Encode(creds)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", from, err)
	}
	return data, nil
}

// jsonProblem describes a JSON error by its position only: the message of a syntax error
// may quote a character of the input, which may be a secret's.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	switch {
	case err == nil:
		return "it is null"
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	case errors.Is(err, io.EOF):
		return "it is empty"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends too early (an unclosed {, [ or string)"
	default:
		return "it is not an object"
	}
}

// Input is the credentials the flags give, for the engine: it reads the file or
// standard input, or asks in a terminal (through p; nil when there is none), when the
// engine calls its Read; the engine reads the Secret of --credentials-from-secret.
func (c *CredentialFlags) Input(stdin io.Reader, p prompt.Prompter) engine.CredentialsInput {
	in := engine.CredentialsInput{FromSecret: c.FromSecret, SyslogDrainURL: c.SyslogDrainURL, RouteServiceURL: c.RouteServiceURL}
	if c.JSON != "" || c.File != "" || len(c.Keys) > 0 {
		in.Read = func() (map[string][]byte, error) { return c.read(stdin, p) }
	}
	return in
}

// read returns the credentials of --credentials-json, --credentials-file (standard
// input for "-") or --credentials-keys (asked for through p), as Secret data.
func (c *CredentialFlags) read(stdin io.Reader, p prompt.Prompter) (map[string][]byte, error) {
	var data map[string][]byte
	var err error
	switch {
	case c.JSON != "":
		data, err = decodeCredentials([]byte(c.JSON), "--credentials-json")
	case c.File != "":
		var raw []byte
		if c.File == "-" {
			raw, err = io.ReadAll(stdin)
		} else {
			raw, err = os.ReadFile(c.File)
		}
		if err != nil {
			return nil, fmt.Errorf("--credentials-file: %w", err)
		}
		data, err = decodeCredentials(raw, "--credentials-file "+c.File)
	case len(c.Keys) > 0:
		if p == nil {
			return nil, cmdutil.UsageErrorf("--credentials-keys asks for each value in a terminal; outside one, give --credentials-file - and the JSON on standard input")
		}
		data = map[string][]byte{}
		for _, k := range c.Keys {
			v, perr := p.Secret(fmt.Sprintf("Credential %s:", k))
			if perr != nil {
				return nil, perr
			}
			data[k] = []byte(v)
		}
	}
	if err != nil {
		return nil, cmdutil.UsageErrorf("%v", err)
	}
	return data, nil
}
