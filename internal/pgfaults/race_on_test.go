//go:build race

package pgfaults_test

// raceEnabled reports whether the tests run under the race detector: the
// failover test runs fewer jobs then (make test reruns it at full size
// without it).
const raceEnabled = true
