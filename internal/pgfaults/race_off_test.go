//go:build !race

package pgfaults_test

const raceEnabled = false
