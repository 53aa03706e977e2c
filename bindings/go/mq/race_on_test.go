//go:build race

package mq

// raceEnabled: the tests run under the race detector; the programs they build do too.
const raceEnabled = true
