package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// testFeaturesArea checks that a store does what its Features say, and
// that each optional capability it lacks is refused with
// store.ErrUnsupported rather than skipped.
func testFeaturesArea(t *testing.T, s *suite) {
	b := s.setup(t, 1)
	f := b.st.Features()
	t.Logf("features: %+v", f)
	if b.st.ReadOnly() {
		t.Error("ReadOnly() = true for a store opened to write")
	}
	job := store.InsertParams{Task: "t", Payload: []byte(`{}`), MaxAttempts: 1, Now: t0}
	if !f.Tx {
		if _, err := b.st.InsertTx(b.ctx, nil, []store.InsertParams{job}); !errors.Is(err, store.ErrUnsupported) {
			t.Errorf("InsertTx without Features.Tx = %v, want ErrUnsupported", err)
		}
		if _, _, err := b.st.InsertWorkflowTx(b.ctx, nil, &store.WorkflowParams{}); !errors.Is(err, store.ErrUnsupported) {
			t.Errorf("InsertWorkflowTx without Features.Tx = %v, want ErrUnsupported", err)
		}
	} else if _, err := b.st.InsertTx(b.ctx, 42, []store.InsertParams{job}); err == nil {
		t.Error("InsertTx with a tx that is no transaction succeeded, want an error naming its type")
	}
	if ch := b.st.Changes(); (ch != nil) != f.Notify {
		t.Errorf("Changes() = %v with Features.Notify %v; want a channel exactly when Notify", ch, f.Notify)
	}
	now, err := b.st.Now(b.ctx)
	switch {
	case !f.Clock && !errors.Is(err, store.ErrUnsupported):
		t.Errorf("Now without Features.Clock = %v, %v; want ErrUnsupported", now, err)
	case f.Clock && (err != nil || now.Sub(time.Now()).Abs() > time.Minute):
		t.Errorf("Now = %v, %v; want the database's time", now, err)
	}
}
