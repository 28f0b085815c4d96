package cputime

import (
	"runtime"
	"testing"
	"time"
)

func TestProcess_GrowsWithWork(t *testing.T) {
	before, ok := Process()
	if !ok {
		if runtime.GOOS == "windows" || runtime.GOOS == "linux" || runtime.GOOS == "darwin" {
			t.Fatalf("Process() not ok on %s", runtime.GOOS)
		}
		t.Skipf("no process CPU time on %s", runtime.GOOS)
	}
	// Spin until the reading moves (the clock's granularity is coarse on
	// some platforms), with a deadline generous for a loaded machine.
	deadline := time.Now().Add(30 * time.Second)
	x := 0
	for {
		for i := range 1_000_000 {
			x += i
		}
		after, _ := Process()
		if after > before {
			if after-before > time.Hour {
				t.Fatalf("CPU time jumped by %v", after-before)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time stayed at %v for 30s of spinning (x=%d)", before, x)
		}
	}
}
