package describe

import (
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
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

// An instance whose bindings follow its updates says so, and a rotation under way shows
// the binding rotated now and those done.
func TestDescribeInstance_ShowsTheRebindPolicyAndItsProgress(t *testing.T) {
	i := storetest.SampleInstance()
	i.Spec.RebindOnUpdate = v1alpha1.RebindPlanChange
	i.Status.Rebind = &v1alpha1.RebindStatus{Reason: "the plan changed from small to large",
		Current: &v1alpha1.RebindTarget{Namespace: "dev", Name: "web", FromID: "b-1"},
		Rotated: []string{"dev/api"}, Failed: []string{"team-b/old"}}

	out := InstanceView(i, nil, nil, time.Now())

	assert.Assert(t, is.Contains(out, "Rebind on update: plan-change (a settled update to another plan rotates every binding)\n"))
	assert.Assert(t, is.Contains(out, "Rebinding:\n  Why:            the plan changed from small to large\n  Now:            dev/web (replacing binding id b-1)\n  Rotated:        dev/api\n  Failed:         team-b/old\n"), out)

	i.Spec.RebindOnUpdate, i.Status.Rebind = "", nil
	out = InstanceView(i, nil, nil, time.Now())
	assert.Assert(t, !strings.Contains(out, "Rebind"), out)
}
