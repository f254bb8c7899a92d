package describe

import (
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestDescribeInstance_ShowsTheIDInUseAtTheBroker(t *testing.T) {
	tests := []struct {
		name               string
		statusID           string
		listed             []string
		want, wantEarlier  string
		wantNoEarlierLines bool
	}{
		{name: "the spec's id", want: "External ID:      " + storetest.InstanceID + "\n", wantNoEarlierLines: true},
		{name: "a new id after orphan mitigation", statusID: "i-2", listed: []string{storetest.InstanceID, "i-2"},
			want:        "External ID:      i-2 (the spec's " + storetest.InstanceID + " is no longer used)\n",
			wantEarlier: "Earlier IDs:      " + storetest.InstanceID + " (the broker may still hold them"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			i := storetest.SampleInstance()
			i.Status.ExternalID, i.Status.ExternalIDs = tc.statusID, tc.listed

			out := InstanceView(i, nil, nil, time.Now())

			assert.Assert(t, is.Contains(out, tc.want))
			if tc.wantNoEarlierLines {
				assert.Assert(t, !strings.Contains(out, "Earlier IDs"), out)
			} else {
				assert.Assert(t, is.Contains(out, tc.wantEarlier))
			}
		})
	}
}
