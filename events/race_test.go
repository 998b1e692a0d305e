//go:build race

package events_test

const raceEnabled = true
