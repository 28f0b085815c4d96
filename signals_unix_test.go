//go:build unix

package queuemax

import (
	"os"
	"syscall"
)

// sigStop and sigCont freeze and resume a child process in the
// multi-process tests.
var sigStop, sigCont os.Signal = syscall.SIGSTOP, syscall.SIGCONT
