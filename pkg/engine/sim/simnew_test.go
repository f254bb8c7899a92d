package sim

// refusedWhileHeld reports a binding id whose bind the broker refused (a 4xx) while it
// held the binding: off the spec, since the honest broker answers an identical bind of
// a binding it holds with 200 and its credentials. The engine takes the refusal as the
// spec says (the binding fails, its id kept for the unbind: "Ids the broker may hold")
// and never sees the credentials the broker keeps, so no binding record can be bound to
// them (-sim.files seed 972: a bind carried out whose answer was lost, its re-send
// answered 409).
func (w *world) refusedWhileHeld(id string) bool {
	t := w.book.ids[id]
	return t != nil && t.refusedHeld
}

// neverHeld reports a binding id whose bind the broker answered as done (200 or 201)
// without carrying it out: the record is bound under an id the broker never held, a lie
// the engine cannot see, so a rotation that failed and kept the old id keeps one the
// broker does not hold (-sim.rogue -sim.asyncbind -sim.brokers seed 1000).
func (w *world) neverHeld(id string) bool {
	t := w.book.ids[id]
	return t != nil && t.unheldSuccess
}
