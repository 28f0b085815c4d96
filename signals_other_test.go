//go:build !unix

package queuemax

import "os"

// sigStop and sigCont are nil where a process cannot be frozen (Windows):
// the tests that pause a child skip there (needStop).
var sigStop, sigCont os.Signal
