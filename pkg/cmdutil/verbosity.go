package cmdutil

import (
	"flag"
	"strconv"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// bodyRedacted replaces the request and response bodies client-go logs from -v=8 on:
// they would print Secrets (binding credentials, broker passwords) and parameters read
// from Secrets to the terminal and to CI logs.
const bodyRedacted = "<not logged: API bodies may hold credentials>"

// applyVerbosity sets client-go's log verbosity from -v. Requests, response codes and
// curl equivalents are logged as kubectl logs them; bodies never are. Without -v,
// client-go's own log lines are not shown: every failure reaches the user as the
// command's error, which names the object and the fix, and a request cut short by Ctrl-C
// would otherwise print client-go's complaint over the command's own message.
func applyVerbosity(v int) {
	if v <= 0 {
		klog.SetLogger(logr.Discard())
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
