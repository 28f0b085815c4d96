package admission

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
)

type statusErr int

func (e statusErr) Error() string   { return fmt.Sprintf("status %d", int(e)) }
func (e statusErr) StatusCode() int { return int(e) }

type httpStatusErr int

func (e httpStatusErr) Error() string   { return "http" }
func (e httpStatusErr) HTTPStatus() int { return int(e) }

type notDep struct{}

func (notDep) Error() string           { return "timeout, but mine" }
func (notDep) Timeout() bool           { return true }
func (notDep) DependencyFailure() bool { return false }

func TestDependencyFailure(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", fmt.Errorf("unsupported scheme %q", "http"), false},
		{"payload shape", fmt.Errorf("decode: %w", errors.New("json: cannot unmarshal")), false},
		{"permanent timeout", queuemaxtype.Permanent(context.DeadlineExceeded), false},
		{"cancel", queuemaxtype.Cancel(refused), false},
		{"snooze", queuemaxtype.Snooze(time.Second), false},
		{"panic", &queuemaxtype.PanicError{Value: "boom"}, false},
		{"job timeout", &queuemaxtype.TimeoutError{Limit: time.Second}, true},
		{"deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), true},
		{"retry after", queuemaxtype.RetryAfter(time.Second, errors.New("slow down")), true},
		{"refused", fmt.Errorf("post: %w", refused), true},
		{"reset", syscall.ECONNRESET, true},
		{"503", statusErr(503), true},
		{"429", statusErr(429), true},
		{"404", statusErr(404), false},
		{"400 HTTPStatus", httpStatusErr(400), false},
		{"502 HTTPStatus", httpStatusErr(502), true},
		{"unknown host", &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}, false},
		{"dns timeout", &net.DNSError{Err: "i/o timeout", Name: "x", IsTimeout: true}, true},
		{"marked", queuemaxtype.Unavailable(errors.New("quota service says no")), true},
		{"unmarked", notDep{}, false},
	} {
		if got := DependencyFailure(c.err); got != c.want {
			t.Errorf("%s: DependencyFailure(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
