package fakeoverflow

// Entries returns how many counts the table holds.
func Entries() int {
	n := 0
	counts.Range(func(any, any) bool { n++; return true })
	return n
}
