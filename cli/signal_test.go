package cli_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWorkerSecondSignal: a second SIGINT or SIGTERM while the worker
// drains releases its running job to pending, without spending an
// attempt, and then the process exits; also when SIGINT was ignored when
// it started (as under nohup).
func TestWorkerSecondSignal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		sig    syscall.Signal
		nohup  bool
		prefix []string
	}{
		{"SIGINT", syscall.SIGINT, false, nil},
		{"SIGTERM", syscall.SIGTERM, false, nil},
		{"SIGINTUnderNohup", syscall.SIGINT, true, []string{"sh", "-c", `trap "" INT; exec "$0" "$@"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			started := make(chan struct{}, 4)
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body) // so that the server sees the client go
				started <- struct{}{}
				select { // a webhook that never answers
				case <-r.Context().Done():
				case <-release:
				}
			}))
			defer srv.Close()
			defer close(release)
			dir := newQueue(t, 2)
			d := []string{"--data-dir", dir}
			ok(t, tk(t, append(d, "enqueue", "--task", "CallWebhook", "--payload", fmt.Sprintf(`{"url":%q,"body":{}}`, srv.URL))...), "enqueue")
			args := append(d, "worker", "--tasks", "CallWebhook", "--drain-timeout", "10m")
			cmd := exec.Command(tasksBin, args...)
			if tc.prefix != nil {
				cmd = exec.Command(tc.prefix[0], append(tc.prefix[1:], append([]string{tasksBin}, args...)...)...)
			}
			cmd.Env = cleanEnv()
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			out := collect(stdout)
			select {
			case <-started:
			case <-time.After(30 * time.Second):
				t.Fatalf("the job never started:\n%s\n%s", out.text(), stderr.String())
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			out.waitFor(t, "draining: waiting up to 10m0s for 1 running job")
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { <-out.done; exited <- cmd.Wait() }()
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("worker after two signals: %v\n%s\n%s", err, out.text(), stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("worker still running 30s after the second signal:\n%s", out.text())
			}
			if !strings.Contains(out.text(), "stopping now: releasing 1 running job to pending") {
				t.Errorf("worker output:\n%s", out.text())
			}
			jobs := listJobs(t, queuemaxBin, append(d, "list")...)
			if len(jobs) != 1 || jobs[0]["status"] != "pending" || jobs[0]["attempts"] != float64(0) {
				t.Errorf("job after the second signal = %v, want pending with no attempt spent", jobs)
			}
		})
	}
}
