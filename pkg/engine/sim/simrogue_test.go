package sim

// liedGone reports an id the broker said it held nothing under while it held it (a
// delete's 200 or 410, or a 4xx to every create of the id, while it had made it), with
// no create of the id since: the engine takes such an answer as the spec says and drops
// the id, and cannot know the broker keeps it (-sim.rogue -sim.asyncbind -sim.brokers
// seeds 1309 and 1824: a record deleted after the lie, its broker deregistered).
func (w *world) liedGone(id string) bool {
	t := w.book.ids[id]
	return t != nil && t.lied && t.gone
}
