package sim

// contextUpdateLiedAbout reports a moved instance whose id the broker answered off the
// OSB spec for (a rogue answer: the poll of a context update the broker carried out
// answered "failed", say). The engine believes the answer, so it sends the context
// update again under a new request, which the broker answers as done a second time:
// nobody can know the first was done, and "at most once per move" (noteMoveUpdate)
// holds only for the broker's honest answers.
func (w *world) contextUpdateLiedAbout(instanceID string) bool {
	t := w.book.ids[instanceID]
	return t != nil && t.rogue
}
