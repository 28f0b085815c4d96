package tasks_test

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/examples/tasks"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func answer(code int, header http.Header) roundTripFunc {
	return func(r *http.Request) (*http.Response, error) {
		if header == nil {
			header = http.Header{}
		}
		return &http.Response{StatusCode: code, Header: header, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	}
}

func TestSendEmail_Call(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name          string
		noMailer      bool
		to            string
		wantSent      []tasks.Message
		wantErr       error
		wantPermanent bool
	}{
		{name: "Delivers", to: "ada@example.com", wantSent: []tasks.Message{{To: "ada@example.com", Subject: "Hi", SentAt: now}}},
		{name: "BadAddress", to: "not an address", wantPermanent: true},
		{name: "NoMailer", noMailer: true, to: "ada@example.com", wantErr: tasks.ErrNoMailer, wantPermanent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			outbox := &tasks.Outbox{}
			deps := tasks.Deps{Mailer: outbox, Now: func() time.Time { return now }}
			if tt.noMailer {
				deps.Mailer = nil
			}
			var h tasks.Tasks
			err := h.SendEmail.Call(tasks.WithDeps(t.Context(), deps), tt.to, "Hi")
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Call error = %v, want %v", err, tt.wantErr)
			}
			var perm *queuemax.PermanentError
			if got := errors.As(err, &perm); got != tt.wantPermanent {
				t.Errorf("Call error = %v, permanent = %v, want %v", err, got, tt.wantPermanent)
			}
			if !tt.wantPermanent && err != nil {
				t.Errorf("Call error = %v, want nil", err)
			}
			if diff := cmp.Diff(tt.wantSent, outbox.Messages(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("sent messages mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGenerateReport_Call(t *testing.T) {
	t.Parallel()
	var h tasks.Tasks
	got, err := h.GenerateReport.Call(t.Context(), 42, "2026-03")
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	want := tasks.Report{UserID: 42, Month: "2026-03", Orders: 5, TotalCents: 6250}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Call mismatch (-want +got):\n%s", diff)
	}
	_, err = h.GenerateReport.Call(t.Context(), 42, "March")
	if perm := (*queuemax.PermanentError)(nil); !errors.As(err, &perm) {
		t.Errorf("Call with a bad month: error = %v, want a permanent error", err)
	}
}

func TestCallWebhook_Call(t *testing.T) {
	t.Parallel()
	opErr := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	tests := []struct {
		name          string
		transport     roundTripFunc
		wantStatus    int // 0: no *StatusError
		wantPermanent bool
		wantDelay     time.Duration // RetryAfterError delay
		wantInline    bool          // the task's RetryOn matches
	}{
		{name: "OK", transport: answer(http.StatusNoContent, nil)},
		{name: "NotFoundIsPermanent", transport: answer(http.StatusNotFound, nil), wantStatus: 404, wantPermanent: true},
		{name: "ServerErrorRetries", transport: answer(http.StatusServiceUnavailable, nil), wantStatus: 503},
		{
			name:       "TooManyRequestsWaits",
			transport:  answer(http.StatusTooManyRequests, http.Header{"Retry-After": {"7"}}),
			wantStatus: 429,
			wantDelay:  7 * time.Second,
		},
		{
			name:       "ConnectionErrorRetriesInline",
			transport:  func(*http.Request) (*http.Response, error) { return nil, opErr },
			wantInline: true,
		},
	}
	retryOn := handler(t, "tasks.CallWebhook").Options.RetryOn
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := tasks.WithDeps(t.Context(), tasks.Deps{HTTP: &http.Client{Transport: tt.transport}})
			var h tasks.Tasks
			err := h.CallWebhook.Call(ctx, "https://hooks.example/x", map[string]string{"event": "signup"})
			if tt.wantStatus == 0 && !tt.wantInline && err != nil {
				t.Fatalf("Call error = %v, want nil", err)
			}
			var status *tasks.StatusError
			if errors.As(err, &status) != (tt.wantStatus != 0) || (status != nil && status.StatusCode() != tt.wantStatus) {
				t.Errorf("Call error = %v, want status %d", err, tt.wantStatus)
			}
			var perm *queuemax.PermanentError
			if got := errors.As(err, &perm); got != tt.wantPermanent {
				t.Errorf("Call error = %v, permanent = %v, want %v", err, got, tt.wantPermanent)
			}
			var after *queuemax.RetryAfterError
			if errors.As(err, &after) != (tt.wantDelay != 0) || (after != nil && after.Delay != tt.wantDelay) {
				t.Errorf("Call error = %v, want retry after %v", err, tt.wantDelay)
			}
			if err != nil {
				if got := retryOn(err); got != tt.wantInline {
					t.Errorf("RetryOn(%v) = %v, want %v", err, got, tt.wantInline)
				}
			}
		})
	}
}

func TestCleanupOldData_Call(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC)
	outbox := &tasks.Outbox{}
	for _, age := range []time.Duration{time.Hour, 40 * 24 * time.Hour} {
		if err := outbox.Send(t.Context(), tasks.Message{To: age.String(), SentAt: now.Add(-age)}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := tasks.WithDeps(t.Context(), tasks.Deps{Retention: outbox, Now: func() time.Time { return now }})
	var h tasks.Tasks
	if err := h.CleanupOldData.Call(ctx); err != nil {
		t.Fatalf("Call: %v", err)
	}
	want := []tasks.Message{{To: "1h0m0s", SentAt: now.Add(-time.Hour)}}
	if diff := cmp.Diff(want, outbox.Messages()); diff != "" {
		t.Errorf("messages after cleanup mismatch (-want +got):\n%s", diff)
	}
}

// TestUnbound checks that handles not bound to a client refuse to enqueue.
func TestUnbound(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var h tasks.Tasks
	errs := map[string]error{}
	_, errs["Delay"] = h.SendEmail.Delay(ctx, "a@example.com", "x")
	_, errs["ScheduleAt"] = h.SendEmail.ScheduleAt(ctx, time.Now(), "a@example.com", "x")
	_, errs["ScheduleIn"] = h.SendEmail.ScheduleIn(ctx, time.Minute, "a@example.com", "x")
	_, errs["Map"] = h.SendEmail.Map(ctx, []string{"a@example.com"}, "x")
	_, errs["MapArgs"] = h.SendEmail.MapArgs(ctx, []tasks.SendEmailArgs{{To: "a@example.com"}})
	_, errs["With.Delay"] = h.SendEmail.With(queuemax.Opts{Key: queuemax.Ptr[int64](1)}).Delay(ctx, "a@example.com", "x")
	_, errs["Stats"] = h.SendEmail.Stats(ctx)
	for name, err := range errs {
		if !errors.Is(err, queuemax.ErrNotBound) {
			t.Errorf("unbound %s error = %v, want ErrNotBound", name, err)
		}
	}
}

func TestArgs_JSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args any
		want string
	}{
		{"SendEmail", tasks.SendEmailArgs{To: "a@example.com", Subject: "Hi"}, `{"to":"a@example.com","subject":"Hi"}`},
		{"GenerateReport", tasks.GenerateReportArgs{UserID: 7, Month: "2026-01"}, `{"user_id":7,"month":"2026-01"}`},
		{"CallWebhook", tasks.CallWebhookArgs{URL: "https://x", Body: map[string]string{"a": "b"}}, `{"url":"https://x","body":{"a":"b"}}`},
		{"CleanupOldData", tasks.CleanupOldDataArgs{}, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(b)); diff != "" {
				t.Errorf("json.Marshal mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func handler(t *testing.T, name string) queuemax.Handler {
	t.Helper()
	for _, h := range tasks.Handlers() {
		if h.Name == name {
			return h
		}
	}
	t.Fatalf("no handler %q", name)
	return queuemax.Handler{}
}

func TestHandlers(t *testing.T) {
	t.Parallel()
	type summary struct {
		Name     string
		Options  queuemax.TaskOptions
		Periodic *queuemax.Periodic
	}
	var got []summary
	for _, h := range tasks.Handlers() {
		if h.Func == nil {
			t.Errorf("handler %s has no Func", h.Name)
		}
		got = append(got, summary{h.Name, h.Options, h.Periodic})
	}
	const pkg = "tasks."
	want := []summary{
		{Name: pkg + "CallWebhook", Options: queuemax.TaskOptions{MaxRetries: queuemax.Ptr(3), Timeout: 10 * time.Second, RateLimit: queuemax.Rate{Limit: 10, Per: time.Second}, InlineRetries: 2}},
		{Name: pkg + "CleanupOldData", Options: queuemax.TaskOptions{MaxRetries: queuemax.Ptr(0)}, Periodic: &queuemax.Periodic{Every: time.Hour}},
		{Name: pkg + "GenerateReport", Options: queuemax.TaskOptions{Priority: queuemax.PriorityMedium, Timeout: 2 * time.Minute}},
		{Name: pkg + "PingMonitor", Options: queuemax.TaskOptions{MaxRetries: queuemax.Ptr(0), Timeout: time.Second}, Periodic: &queuemax.Periodic{Every: 2 * time.Second}},
		{Name: pkg + "SendEmail", Options: queuemax.TaskOptions{Priority: queuemax.PriorityHigh, MaxRetries: queuemax.Ptr(5), Timeout: 30 * time.Second, Queue: "emails"}},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(queuemax.TaskOptions{}, "RetryOn")); diff != "" {
		t.Errorf("Handlers() mismatch (-want +got):\n%s", diff)
	}
	// Handlers run jobs through the same codec: decode a stored payload.
	h := handler(t, pkg+"GenerateReport")
	res, err := h.Func(t.Context(), &queuemax.Job{Task: h.Name, Payload: json.RawMessage(`{"user_id":7,"month":"2026-01"}`)})
	if err != nil {
		t.Fatalf("GenerateReport handler: %v", err)
	}
	if diff := cmp.Diff(tasks.Report{UserID: 7, Month: "2026-01", Orders: 3, TotalCents: 3750}, res); diff != "" {
		t.Errorf("GenerateReport handler result mismatch (-want +got):\n%s", diff)
	}
}

// TestNew checks that New binds every handle to the client under the
// task's stable name.
func TestNew(t *testing.T) {
	t.Parallel()
	h := tasks.New(nil)
	got := []string{h.CallWebhook.Name(), h.CleanupOldData.Name(), h.GenerateReport.Name(), h.PingMonitor.Name(), h.SendEmail.Name()}
	var want []string
	for _, x := range tasks.Handlers() {
		want = append(want, x.Name)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("handle names mismatch (-want +got):\n%s", diff)
	}
}

func TestPingMonitor(t *testing.T) {
	t.Parallel()
	var pings atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		pings.Add(1)
	}))
	defer srv.Close()
	ctx := tasks.WithDeps(t.Context(), tasks.Deps{HTTP: srv.Client(), MonitorURL: srv.URL})
	var h tasks.Tasks // unbound: Call still works
	for range 2 {
		if err := h.PingMonitor.Call(ctx); err != nil {
			t.Fatalf("PingMonitor.Call: %v", err)
		}
	}
	if pings.Load() != 2 {
		t.Errorf("pings = %d, want 2", pings.Load())
	}
	if err := h.PingMonitor.Call(tasks.WithDeps(t.Context(), tasks.Deps{HTTP: srv.Client(), MonitorURL: srv.URL + "/x\x7f"})); err == nil {
		t.Error("PingMonitor with a bad URL succeeded")
	}
}

// TestHandles_OneVocabulary checks that a generated handle's method set is
// the generated vocabulary only: the Enqueue* methods of the wrapped
// queuemax.Task must not show through (go doc lists the same set).
func TestHandles_OneVocabulary(t *testing.T) {
	t.Parallel()
	var got []string
	rt := reflect.TypeFor[tasks.SendEmailTask]()
	for i := range rt.NumMethod() {
		got = append(got, rt.Method(i).Name)
	}
	want := []string{"Call", "Client", "Delay", "DelayTx", "Map", "MapArgs", "MapArgsTx", "MapTx", "Name",
		"ScheduleAt", "ScheduleAtTx", "ScheduleIn", "ScheduleInTx", "Stats", "Step", "StepArgs", "With"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SendEmailTask methods mismatch (-want +got):\n%s", diff)
	}
	if rt.NumField() != 1 || rt.Field(0).IsExported() {
		t.Errorf("SendEmailTask exports a field (%v): the wrapped queuemax.Task's methods would be promoted", rt.Field(0))
	}
}
