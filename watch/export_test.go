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
