//go:build race

package correlator

const raceEnabled = true
