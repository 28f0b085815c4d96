//go:build race

package queuemax

// raceEnabled reports whether the tests run under the race detector, which
// makes modernc.org/sqlite several times slower: volume tests shrink.
const raceEnabled = true
