package watch

// SetAfterSend sets the hook the loop runs each time it has offered an event
// to a watcher; the test must set it before it starts a broadcaster and
// reset it (nil) after the broadcaster's loop has ended.
func SetAfterSend(f func()) { afterSend = f }
