//go:build race

package engine

// raceEnabled reports whether the tests run under the race detector, which
// makes modernc.org/sqlite several times slower: timing bounds loosen.
const raceEnabled = true
