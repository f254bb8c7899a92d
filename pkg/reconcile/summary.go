package reconcile

import (
	"cmp"
	"slices"
	"time"
)

// Outcome is what a run did with one record.
type Outcome string

// Outcomes of a record.
const (
	// Done: the record settled (Ready, deleted, catalog fetched).
	Done Outcome = "done"
	// InProgress: work was done or is under way (an async operation at the broker), or
	// the run's time ran out first; a later run goes on.
	InProgress Outcome = "in progress"
	// Waiting: the record's next step (retry, poll) is not due within this run, or
	// it waits for other records this run could not finish (a broker being deleted for
	// its instances, an instance being deleted for its bindings).
	Waiting Outcome = "waiting"
	// Skipped: someone else (a user's command, another reconcile) holds a live claim.
	Skipped Outcome = "skipped (claimed)"
	// Failed: a person must look: a terminal failure, or the record could not be read
	// or written.
	Failed Outcome = "failed"
	// WouldDrive: --dry-run; the step is due and would be taken.
	WouldDrive Outcome = "would drive"
	// Refused: the record asks for something its author may not do, or names what the
	// catalog does not trust (its Refused condition says which); nothing was sent to a
	// broker for it. A later run looks again.
	Refused Outcome = "refused"
)

// Item is one record's line of the summary.
type Item struct {
	Namespace string  `json:"namespace"`
	Kind      string  `json:"kind"`
	Name      string  `json:"name"`
	Outcome   Outcome `json:"outcome"`
	// Until is when the record's next step is due, for Waiting (and InProgress when
	// known).
	Until  *time.Time `json:"until,omitempty"`
	Detail string     `json:"detail,omitempty"`
	// Steps is how many engine steps this run took on the record.
	Steps int `json:"steps,omitempty"`
	// Rotated: this run rotated the binding's credentials (--rotate-due).
	Rotated bool `json:"rotated,omitempty"`
}

// OutcomeText is the OUTCOME column: "waiting until T" for a wait.
func (i Item) OutcomeText() string {
	if i.Outcome == Waiting && i.Until != nil {
		return "waiting until " + i.Until.UTC().Format(time.RFC3339)
	}
	return string(i.Outcome)
}

// Summary is what a run did.
type Summary struct {
	DryRun bool `json:"dryRun,omitempty"`
	// TimeUp: --max-duration ran out; records not reached are InProgress.
	TimeUp bool `json:"timeUp,omitempty"`
	// Interrupted: Options.Interrupt stopped the run (Ctrl-C); Left records were not
	// reached, or have a step still to take.
	Interrupted bool            `json:"interrupted,omitempty"`
	Left        int             `json:"left,omitempty"`
	Counts      map[Outcome]int `json:"counts"`
	Items       []Item          `json:"items"`
	Shard       string          `json:"shard,omitempty"`
	// Group is this member's share of its shard group (Options.Group).
	Group *GroupSummary `json:"group,omitempty"`
	// Regrouped: the shard group's live members changed during the run, which was
	// ended early (as Drain does) so that the next run takes up the new share.
	Regrouped bool `json:"regrouped,omitempty"`
	// Took is how long the run took, e.g. "1.5s".
	Took string `json:"took,omitempty"`
}

// Failed reports whether anything needs a person.
func (s Summary) Failed() bool { return s.Counts[Failed] > 0 }

// Sort orders items by namespace, kind and name.
func Sort(items []Item) {
	slices.SortFunc(items, func(a, b Item) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
}

// GroupSummary is what a run of a shard group's member took on.
type GroupSummary struct {
	Name string `json:"name"`
	// Members are the live members' ids at the start of the run.
	Members []string `json:"members"`
	// Listed is how many records with work the run listed (every member's);
	// Owned, how many of them are this member's share.
	Listed int `json:"listed"`
	Owned  int `json:"owned"`
	// TakenOver is how many records of another member's share the run took up,
	// pending unclaimed past the starvation bound.
	TakenOver int `json:"takenOver,omitempty"`
	// Error: the Leases could not be listed; the last members seen were used.
	Error string `json:"error,omitempty"`
}
