package lifecycle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// ParamFlags are the parameter flags of provision and update.
type ParamFlags struct {
	Params     []string
	JSON       string
	File       string
	FromSecret []string
}

// AddFlags adds -p/--param, --params-json, --params-file and --params-from-secret.
func (p *ParamFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&p.Params, "param", "p", nil, "A parameter as key=value; repeat a key for an array. Values are typed by the plan's schema.")
	fs.StringVar(&p.JSON, "params-json", "", "Parameters as a JSON object.")
	fs.StringVar(&p.File, "params-file", "", `Parameters from a file holding a JSON object ("-" for standard input).`)
	fs.StringArrayVar(&p.FromSecret, "params-from-secret", nil, "Parameters from a Secret: SECRET/KEY (a JSON object under KEY) or SECRET (every key a string parameter). Read for every new broker call, never stored in the record; a re-send of an interrupted call sends the values first sent.")
	// svcat's --secret SECRET[KEY] (its -s is kubectl's --server here).
	cmdutil.AddHiddenAliases(fs, map[string]string{"secret": "params-from-secret"})
}

// Validate checks flags that cannot go together.
func (p *ParamFlags) Validate() error {
	if p.JSON != "" && p.File != "" {
		return cmdutil.UsageErrorf("--params-json and --params-file cannot be used together")
	}
	if _, err := ParseSecretRefs(p.FromSecret); err != nil {
		return err
	}
	return p.checkLocal()
}

// checkLocal checks what needs no cluster: --params-json is one JSON object and
// --params-file exists (its content is checked once read, with the plan's schema).
func (p *ParamFlags) checkLocal() error {
	if p.JSON != "" {
		var obj map[string]any
		d := json.NewDecoder(bytes.NewReader([]byte(p.JSON)))
		if err := d.Decode(&obj); err != nil || obj == nil {
			return cmdutil.UsageErrorf("--params-json must be a JSON object: %v", jsonProblem(err))
		}
		if _, err := d.Token(); err != io.EOF {
			return cmdutil.UsageErrorf("--params-json must be a single JSON object: there is more after it")
		}
	}
	if p.File != "" && p.File != "-" {
		if _, err := os.Stat(p.File); err != nil {
			return cmdutil.UsageErrorf("--params-file %q cannot be read: %v", p.File, errors.Unwrap(err))
		}
	}
	return nil
}

// Given reports whether any inline parameter flag was given.
func (p *ParamFlags) Given() bool { return len(p.Params) > 0 || p.JSON != "" || p.File != "" }

// Input reads the parameters the flags give, for the engine to type, merge and check
// with the plan's schema: the content of --params-json or --params-file (standard
// input for "-"), the -p pairs and the Secrets of --params-from-secret.
func (p *ParamFlags) Input(stdin io.Reader) (engine.ParametersInput, error) {
	in := engine.ParametersInput{Pairs: p.Params}
	switch {
	case p.JSON != "":
		in.Object = []byte(p.JSON)
	case p.File == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return in, fmt.Errorf("cannot read parameters from standard input: %w", err)
		}
		in.Object = b
	case p.File != "":
		b, err := os.ReadFile(p.File)
		if err != nil {
			return in, fmt.Errorf("cannot read --params-file: %w", err)
		}
		in.Object = b
	}
	from, err := ParseSecretRefs(p.FromSecret)
	if err != nil {
		return in, err
	}
	in.FromSecret = from
	return in, nil
}

// Changes reads the parameters the flags give as a change of an instance's (see
// Input): nil when none is given, so that the parameters stay as they are.
func (p *ParamFlags) Changes(stdin io.Reader) (*engine.ParametersInput, error) {
	if !p.Given() && len(p.FromSecret) == 0 {
		return nil, nil
	}
	params, err := p.Input(stdin)
	if err != nil {
		return nil, err
	}
	return &params, nil
}
