package cmdutil

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// AddHiddenAliases makes each alias (an old name, such as svcat's) a second name
// of a flag of fs: "--alias V" sets the flag as "--name V" does. Aliases are not
// listed in --help nor completed; docs/svcat.md documents them. An alias that
// is itself a flag of fs is left alone: it would clash.
func AddHiddenAliases(fs *pflag.FlagSet, aliases map[string]string) {
	prev := fs.GetNormalizeFunc()
	fs.SetNormalizeFunc(func(f *pflag.FlagSet, name string) pflag.NormalizedName {
		n := prev(f, name)
		if target, ok := aliases[string(n)]; ok && f.Lookup(target) != nil {
			return pflag.NormalizedName(target)
		}
		return n
	})
}

// WaitTimeout is the value of a --timeout flag: a duration (10m, 90s), or a
// bare 0 or -1 (svcat's "no limit"); 0 or negative waits without limit.
type WaitTimeout time.Duration

// Set implements pflag.Value.
func (t *WaitTimeout) Set(v string) error {
	if n, err := strconv.Atoi(v); err == nil && n <= 0 {
		*t = WaitTimeout(time.Duration(n))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q is not a duration (such as 90s or 10m; 0 or -1: no limit)", v)
	}
	*t = WaitTimeout(d)
	return nil
}

func (t *WaitTimeout) String() string { return time.Duration(*t).String() }

// Type implements pflag.Value.
func (t *WaitTimeout) Type() string { return "duration" }
