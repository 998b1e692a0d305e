package watch

// SetAfterSend sets the hook every broadcaster's loop runs each time it has
// offered an event to a watcher (nil: none).
func SetAfterSend(f func()) {
	if f == nil {
		afterSend.Store(nil)
		return
	}
	afterSend.Store(&f)
}

// Watching returns how many watchers b counts as registered or queued for
// registration and not yet forgotten.
func Watching(b *Broadcaster) int64 { return b.watching.Load() }
