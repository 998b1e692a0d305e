package record

// Kept returns how many watchers and sinks eb, a broadcaster of this
// package, still holds: what the external tests check a stopped watcher
// gives back.
func Kept(eb EventBroadcaster) (watchers, sinks int) {
	b := eb.(*broadcaster)
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.watchers), len(b.sinks)
}
