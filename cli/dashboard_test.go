package cli_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/cli"
)

// startDashboard runs queuemax dashboard on a free port and returns its
// base URL; cleanup stops it with SIGTERM and checks that it exits 0
// (not through t.Context, which ends before cleanups run).
func startDashboard(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	return startDashboardOf(t, queuemaxBin, dir, env, args...)
}

// startDashboardOf is startDashboard for the binary bin.
func startDashboardOf(t *testing.T, bin, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--data-dir", dir, "dashboard", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = cleanEnv(env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := collect(stdout)
	out.waitFor(t, "/ui/")
	m := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/ui/`).FindStringSubmatch(out.text())
	if m == nil {
		t.Fatalf("dashboard printed no address:\n%s", out.text())
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-out.done
		if err := cmd.Wait(); err != nil {
			t.Errorf("dashboard after SIGTERM: %v\n%s\n%s", err, out.text(), stderr.String())
		}
	})
	return "http://" + m[1]
}

func httpDo(t *testing.T, method, url, token string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header
}

func TestDashboard(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 2)
	withClient(t, dir, 2, func(c *queuemax.Client) {
		if _, err := c.Enqueue(context.Background(), "mail.send", map[string]string{"to": "a@example.com"}, queuemax.Opts{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ReadOnly", func(t *testing.T) {
		t.Parallel()
		base := startDashboard(t, dir, nil)
		if code, _, h := httpDo(t, "GET", base+"/", ""); code != http.StatusFound || h.Get("Location") != "/ui/" {
			t.Errorf("GET / = %d to %q, want a redirect to /ui/", code, h.Get("Location"))
		}
		if code, body, _ := httpDo(t, "GET", base+"/ui/", ""); code != 200 || !strings.Contains(body, "queuemax dashboard") {
			t.Errorf("GET /ui/ = %d\n%s", code, body)
		}
		if code, body, _ := httpDo(t, "GET", base+"/stats", ""); code != 200 || !strings.Contains(body, `"pending": 1`) {
			t.Errorf("GET /stats = %d\n%s", code, body)
		}
		if code, body, _ := httpDo(t, "GET", base+"/tasks", ""); code != 200 || !strings.Contains(body, `"task": "mail.send"`) {
			t.Errorf("GET /tasks = %d\n%s", code, body)
		}
		// /metrics: the stored jobs by shard, task and status, as Stats counts them.
		if code, body, _ := httpDo(t, "GET", base+"/metrics", ""); code != 200 ||
			!regexp.MustCompile(`(?m)^queuemax_jobs\{shard="\d",status="pending",task="mail.send"\} 1$`).MatchString(body) ||
			!strings.Contains(body, "queuemax_workers_live 0") {
			t.Errorf("GET /metrics = %d, want the pending mail.send job and no live worker:\n%s", code, body)
		}
		if code, body, _ := httpDo(t, "POST", base+"/retry", "anything"); code != http.StatusForbidden || !strings.Contains(body, "read-only") {
			t.Errorf("POST /retry on a read-only dashboard = %d %s, want 403", code, body)
		}
	})

	t.Run("Token", func(t *testing.T) {
		t.Parallel()
		tokenFile := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(tokenFile, []byte("tok-123\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		base := startDashboard(t, dir, nil, "--token-file", tokenFile, "--protect-reads")
		if code, _, _ := httpDo(t, "GET", base+"/stats", ""); code != http.StatusUnauthorized {
			t.Errorf("GET /stats without the token and --protect-reads = %d, want 401", code)
		}
		if code, _, _ := httpDo(t, "GET", base+"/metrics", ""); code != http.StatusUnauthorized {
			t.Errorf("GET /metrics without the token and --protect-reads = %d, want 401", code)
		}
		if code, body, _ := httpDo(t, "GET", base+"/metrics", "tok-123"); code != 200 || !strings.Contains(body, "queuemax_jobs{") {
			t.Errorf("GET /metrics with the token = %d\n%s", code, body)
		}
		if code, _, _ := httpDo(t, "GET", base+"/ui/", ""); code != 200 {
			t.Errorf("GET /ui/ = %d, want 200 (the page asks for the token)", code)
		}
		if code, body, _ := httpDo(t, "POST", base+"/retry", "tok-123"); code != 200 || !strings.Contains(body, `"retried": 0`) {
			t.Errorf("POST /retry with the token = %d %s", code, body)
		}
		if code, _, _ := httpDo(t, "POST", base+"/retry", "wrong"); code != http.StatusUnauthorized {
			t.Errorf("POST /retry with a wrong token = %d, want 401", code)
		}
	})

	t.Run("Env", func(t *testing.T) {
		t.Parallel()
		base := startDashboard(t, dir, []string{cli.TokenEnv + "=env-tok"})
		if code, _, _ := httpDo(t, "POST", base+"/recover", "env-tok"); code != 200 {
			t.Errorf("POST /recover with the token from %s = %d", cli.TokenEnv, code)
		}
	})

	t.Run("UsageErrors", func(t *testing.T) {
		t.Parallel()
		wantFail(t, qm(t, "--data-dir", dir, "dashboard", "--protect-reads"), cli.ExitUsage, "--protect-reads needs an admin token")
		wantFail(t, qm(t, "--data-dir", dir, "dashboard", "--addr", "8080"), cli.ExitUsage, `--addr "8080"`)
		wantFail(t, qm(t, "--data-dir", filepath.Join(dir, "nope"), "dashboard"), cli.ExitFailure, "does not exist")
	})
}

// TestDashboard_NoMetricsWithoutProgramMetrics: a binary built on cli
// without Program.Metrics (the example registry) serves the dashboard and
// the API but no /metrics, so it needs no metrics library.
func TestDashboard_NoMetricsWithoutProgramMetrics(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 1)
	base := startDashboardOf(t, tasksBin, dir, nil)
	if code, _, _ := httpDo(t, "GET", base+"/stats", ""); code != 200 {
		t.Errorf("GET /stats = %d, want 200", code)
	}
	if code, body, _ := httpDo(t, "GET", base+"/metrics", ""); code != http.StatusNotFound {
		t.Errorf("GET /metrics = %d, want 404 without Program.Metrics\n%s", code, body)
	}
}
