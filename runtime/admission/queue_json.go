package admission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// The JSON and text forms of a queue's limits (the root package's
// queuemax.QueueLimits forwards here with its rule).

// queueLimitsJSON is a queue's limits' JSON form.
type queueLimitsJSON struct {
	Rate        int    `json:"rate,omitempty"`
	Per         string `json:"per,omitempty"`
	Concurrency int    `json:"concurrency,omitempty"`
}

// MarshalQueueLimits writes r as {"rate": N, "per": "1s", "concurrency": N}.
func MarshalQueueLimits(r store.LimitRule) ([]byte, error) {
	j := queueLimitsJSON{Rate: r.Rate, Concurrency: r.Concurrency}
	if r.Rate != 0 || r.Per != 0 {
		j.Per = r.Per.String()
	}
	return json.Marshal(j)
}

// UnmarshalQueueLimits reads MarshalQueueLimits' form; "per" is a
// duration ("1s", "1m"), required with a rate. Unknown fields are errors.
func UnmarshalQueueLimits(b []byte) (store.LimitRule, error) {
	var j queueLimitsJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return store.LimitRule{}, err
	}
	var per time.Duration
	if j.Per != "" {
		d, err := time.ParseDuration(j.Per)
		if err != nil {
			return store.LimitRule{}, fmt.Errorf("%w: per %q: want a duration such as \"1s\" or \"1m\"", store.ErrInvalidLimit, j.Per)
		}
		per = d
	}
	return store.LimitRule{Rate: j.Rate, Per: per, Concurrency: j.Concurrency}, nil
}

// QueueLimitsString is r as the CLI prints it, e.g. "rate 50/1s,
// concurrency 4", or "none".
func QueueLimitsString(r store.LimitRule) string {
	var parts []string
	if r.Rate > 0 {
		parts = append(parts, fmt.Sprintf("rate %d/%s", r.Rate, r.Per))
	}
	if r.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("concurrency %d", r.Concurrency))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
