package enqueue

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/queuemax/queuemax/internal/codec"
)

// Schemas checks the payloads of tasks a client has no handler of against
// the payload schemas their live workers published. It reads them again
// at most every Refresh, whether the last read worked or not (a failing
// registry must not cost a read per enqueue). Its fields are set once; it
// is safe for concurrent use.
type Schemas struct {
	// Read returns the schemas each live worker published, by task; one
	// task may have several (they differ while a new version rolls out).
	Read    func(ctx context.Context) ([]map[string]json.RawMessage, error)
	Refresh time.Duration

	mu      sync.Mutex
	at      time.Time // monotonic: when byTask was last read (or tried)
	byTask  map[string][]codec.Schema
	reading bool
}

// Check checks raw against the schemas live workers published for task:
// it must fit one of them. No published schema means no check; a registry
// that cannot be read keeps the last copy, and never refuses an enqueue.
func (s *Schemas) Check(task string, raw json.RawMessage) error {
	var first error
	for _, sc := range s.published(task) {
		err := sc.Check(task, raw)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// published returns the parsed schemas of task, reading them again when
// the cached copy is older than Refresh.
func (s *Schemas) published(task string) []codec.Schema {
	s.mu.Lock()
	fresh := !s.at.IsZero() && time.Since(s.at) < s.Refresh
	if fresh || s.reading || s.Read == nil {
		out := s.byTask[task]
		s.mu.Unlock()
		return out
	}
	s.reading = true
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	byTask := map[string][]codec.Schema{}
	seen := map[string]bool{}
	workers, err := s.Read(ctx)
	for _, w := range workers {
		for name, raw := range w {
			if key := name + "\x00" + string(raw); !seen[key] {
				seen[key] = true
				if sc, perr := codec.ParseSchema(raw); perr == nil {
					byTask[name] = append(byTask[name], sc)
				}
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reading = false
	s.at = time.Now()
	if err == nil {
		s.byTask = byTask
	}
	return s.byTask[task]
}
