package enqueue

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/queuemax/queuemax/internal/codec"
)

// TestSchemas_Check checks a payload against the schemas workers
// published: it must fit one of them, no schema means no check, and the
// registry is read at most once per Refresh, even when it fails.
func TestSchemas_Check(t *testing.T) {
	t.Parallel()
	type v1 struct {
		To string `json:"to"`
	}
	type v2 struct {
		To   string `json:"to"`
		Cc   string `json:"cc"`
		Note int    `json:"note"`
	}
	reads := 0
	var fail error
	s := &Schemas{Refresh: time.Hour, Read: func(context.Context) ([]map[string]json.RawMessage, error) {
		reads++
		return []map[string]json.RawMessage{
			{"mail.Send": codec.PayloadSchema(reflect.TypeFor[v1]())},
			{"mail.Send": codec.PayloadSchema(reflect.TypeFor[v2]())},
		}, fail
	}}
	if err := s.Check("mail.Send", json.RawMessage(`{"to":"a"}`)); err != nil {
		t.Errorf("a payload of the old version: %v", err)
	}
	if err := s.Check("mail.Send", json.RawMessage(`{"to":"a","cc":"b","note":1}`)); err != nil {
		t.Errorf("a payload of the new version: %v", err)
	}
	if err := s.Check("mail.Send", json.RawMessage(`{"to":1}`)); !errors.Is(err, codec.ErrPayloadShape) {
		t.Errorf("a payload of neither: %v; want ErrPayloadShape", err)
	}
	if err := s.Check("other.Task", json.RawMessage(`{"x":[1]}`)); err != nil {
		t.Errorf("a task without a published schema: %v", err)
	}
	if reads != 1 {
		t.Errorf("%d registry reads within one Refresh, want 1", reads)
	}
	failing := &Schemas{Refresh: time.Hour, Read: func(context.Context) ([]map[string]json.RawMessage, error) {
		reads++
		return nil, errors.New("registry down")
	}}
	reads = 0
	for range 3 {
		if err := failing.Check("mail.Send", json.RawMessage(`{"to":1}`)); err != nil {
			t.Errorf("an unreadable registry refused an enqueue: %v", err)
		}
	}
	if reads != 1 {
		t.Errorf("a failing registry was read %d times within one Refresh, want 1", reads)
	}
}
