package cmdutil

import (
	"flag"
	"strconv"

	"k8s.io/klog/v2"
)

// bodyRedacted replaces the request and response bodies client-go logs from -v=8 on:
// they would print Secrets (binding credentials, broker passwords) and parameters read
// from Secrets to the terminal and to CI logs.
const bodyRedacted = "<not logged: API bodies may hold credentials>"

// applyVerbosity sets client-go's log verbosity from -v. Requests, response codes and
// curl equivalents are logged as kubectl logs them; bodies never are.
func applyVerbosity(v int) {
	if v <= 0 {
		return
	}
	var fs flag.FlagSet
	klog.InitFlags(&fs)
	_ = fs.Set("v", strconv.Itoa(v))
	klog.SetLogFilter(redactBodies{})
}

// redactBodies is a klog filter that drops API request and response bodies.
type redactBodies struct{}

func (redactBodies) Filter(args []any) []any { return args }

func (redactBodies) FilterF(format string, args []any) (string, []any) { return format, args }

func (redactBodies) FilterS(msg string, kv []any) (string, []any) {
	if msg != "Request Body" && msg != "Response Body" {
		return msg, kv
	}
	out := make([]any, len(kv))
	copy(out, kv)
	for i := 0; i+1 < len(out); i += 2 {
		if k, ok := out[i].(string); ok && k == "body" {
			out[i+1] = bodyRedacted
		}
	}
	return msg, out
}
