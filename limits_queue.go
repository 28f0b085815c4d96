package queuemax

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// QueueLimits are the global limits of a named queue, over every process
// on the same data directory or database (Client.SetQueueLimits): at most
// Rate starts (a token bucket with a burst of Rate.Limit, as
// TaskOptions.GlobalRateLimit) and at most Concurrency jobs of the queue
// running at once. The zero value limits nothing.
// Its JSON is {"rate": 50, "per": "1s", "concurrency": 4}, each field
// left out when zero.
type QueueLimits struct {
	Rate        Rate
	Concurrency int
}

// queueLimitsJSON is QueueLimits' JSON form.
type queueLimitsJSON struct {
	Rate        int    `json:"rate,omitempty"`
	Per         string `json:"per,omitempty"`
	Concurrency int    `json:"concurrency,omitempty"`
}

// MarshalJSON writes l as {"rate": N, "per": "1s", "concurrency": N}.
func (l QueueLimits) MarshalJSON() ([]byte, error) {
	j := queueLimitsJSON{Rate: l.Rate.Limit, Concurrency: l.Concurrency}
	if l.Rate.Limit != 0 || l.Rate.Per != 0 {
		j.Per = l.Rate.Per.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads MarshalJSON's form; "per" is a duration ("1s",
// "1m"), required with a rate.
func (l *QueueLimits) UnmarshalJSON(b []byte) error {
	var j queueLimitsJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return err
	}
	var per time.Duration
	if j.Per != "" {
		d, err := time.ParseDuration(j.Per)
		if err != nil {
			return fmt.Errorf("%w: per %q: want a duration such as \"1s\" or \"1m\"", ErrInvalidLimit, j.Per)
		}
		per = d
	}
	*l = QueueLimits{Rate: Rate{Limit: j.Rate, Per: per}, Concurrency: j.Concurrency}
	return nil
}

// IsZero reports whether l limits nothing.
func (l QueueLimits) IsZero() bool { return l.Rate.Limit <= 0 && l.Concurrency <= 0 }

// String is l as the CLI prints it, e.g. "rate 50/1s, concurrency 4", or
// "none".
func (l QueueLimits) String() string {
	var parts []string
	if l.Rate.Limit > 0 {
		parts = append(parts, fmt.Sprintf("rate %d/%s", l.Rate.Limit, l.Rate.Per))
	}
	if l.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("concurrency %d", l.Concurrency))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func (l QueueLimits) rule() store.LimitRule {
	return store.LimitRule{Rate: l.Rate.Limit, Per: l.Rate.Per, Concurrency: l.Concurrency}
}

func queueLimitsOf(r store.LimitRule) QueueLimits {
	l := QueueLimits{Concurrency: r.Concurrency}
	if r.Rate > 0 {
		l.Rate = Rate{Limit: r.Rate, Per: r.Per}
	}
	return l
}

// checkQueueLimits says what is wrong with l for queue.
func checkQueueLimits(queue string, l QueueLimits) error {
	switch {
	case l.Concurrency < 0:
		return fmt.Errorf("%w: queue %q: concurrency %d (want ≥ 0; 0 clears it)", ErrInvalidLimit, queue, l.Concurrency)
	case l.Rate.Limit < 0:
		return fmt.Errorf("%w: queue %q: rate %d per %v (want ≥ 0; 0 clears it)", ErrInvalidLimit, queue, l.Rate.Limit, l.Rate.Per)
	case l.Rate.Limit > 0 && l.Rate.Per <= 0:
		return fmt.Errorf("%w: queue %q: rate %d per %v (want a positive period, e.g. 50/s)", ErrInvalidLimit, queue, l.Rate.Limit, l.Rate.Per)
	case l.Rate.Limit == 0 && l.Rate.Per < 0:
		return fmt.Errorf("%w: queue %q: rate period %v (want ≥ 0)", ErrInvalidLimit, queue, l.Rate.Per)
	}
	return nil
}

// SetQueueLimits sets queue's global limits, over every process that
// shares the store: from their next claim round, at most l.Rate jobs of
// the queue start, and at most l.Concurrency run at once (a process that
// saw no limit on any queue reads them again within 50 ms, or
// PollInterval if longer). The limits are stored and outlive every
// process; the zero QueueLimits clears them. Jobs already running are
// not stopped. A bad name is ErrInvalidQueue, a bad limit
// ErrInvalidLimit; a store without global limits returns an error saying
// so.
func (c *Client) SetQueueLimits(ctx context.Context, queue string, l QueueLimits) error {
	queue = store.QueueOf(queue)
	if err := store.CheckQueueName(queue); err != nil {
		return err
	}
	if err := checkQueueLimits(queue, l); err != nil {
		return err
	}
	lim := c.st
	if c.cfg.ReadOnly {
		return ErrReadOnly
	}
	if err := lim.SetQueueLimits(ctx, queue, l.rule(), c.now()); err != nil {
		return err
	}
	if e := c.engine.Load(); e != nil {
		e.QueueLimitsChanged()
	}
	c.notify()
	return nil
}

// queueLimits returns every queue's stored limits (nil without any, or on
// a store without limits).
func (c *Client) queueLimits(ctx context.Context) (map[string]QueueLimits, error) {
	lim := c.st
	rules, err := lim.QueueLimits(ctx)
	if err != nil || len(rules) == 0 {
		return nil, err
	}
	out := make(map[string]QueueLimits, len(rules))
	for name, r := range rules {
		out[name] = queueLimitsOf(r)
	}
	return out, nil
}

// addQueueLimits sets each queue's Limits in byName, adding the limited
// queues it lacks.
func (c *Client) addQueueLimits(ctx context.Context, byName map[string]QueueInfo) error {
	ls, err := c.queueLimits(ctx)
	if err != nil {
		return err
	}
	for name, l := range ls {
		q := byName[name]
		q.Name, q.Limits = name, l
		byName[name] = q
	}
	return nil
}

// queueLimitInfos lists the queues' limits with their use (usage is the
// store's state rows, now).
func (c *Client) queueLimitInfos(ctx context.Context, usage []store.LimitUsage) ([]GlobalLimitInfo, error) {
	ls, err := c.queueLimits(ctx)
	if err != nil || len(ls) == 0 {
		return nil, err
	}
	used := make(map[string]store.LimitUsage, len(usage))
	for _, u := range usage {
		if name, ok := strings.CutPrefix(u.Scope, "queue:"); ok && u.Key == "" {
			used[name] = u
		}
	}
	// Running is the queue's jobs that processes claimed, at most the
	// slots held: a slot kept for prefetch runs nothing.
	var claimed map[string]int
	if qs, err := c.st.QueueList(ctx); err == nil {
		claimed = make(map[string]int, len(qs))
		for _, q := range qs {
			claimed[store.QueueOf(q.Name)] = int(q.Processing)
		}
	} else {
		return nil, err
	}
	out := make([]GlobalLimitInfo, 0, len(ls))
	for name, l := range ls {
		u := used[name]
		g := GlobalLimitInfo{Scope: "queue", Name: name, Rate: l.Rate.Limit, Concurrency: l.Concurrency,
			Running: min(u.Running, claimed[store.QueueOf(name)]), Slots: u.Running}
		if l.Rate.Limit > 0 {
			g.Per, g.Started = l.Rate.Per.String(), u.Started
		}
		out = append(out, g)
	}
	return out, nil
}

// queueHeldReasons says, per queue whose limit is reached, why its ready
// jobs wait (from the store's state rows).
func queueHeldReasons(usage []store.LimitUsage) map[string]string {
	var out map[string]string
	for _, u := range usage {
		name, ok := strings.CutPrefix(u.Scope, "queue:")
		if !ok || u.Key != "" {
			continue
		}
		r := u.Rule
		var why string
		switch {
		case r.Concurrency > 0 && u.Running >= r.Concurrency:
			why = fmt.Sprintf("global concurrency of queue %s reached (%d/%d running)", name, u.Running, r.Concurrency)
		case r.Rate > 0 && u.Started >= r.Rate:
			why = fmt.Sprintf("global rate limit of queue %s reached (%d/%d started in the last %s)", name, u.Started, r.Rate, r.Per)
		}
		if why != "" {
			if out == nil {
				out = make(map[string]string)
			}
			out[name] = why
		}
	}
	return out
}

// fillQueueHeld sets Held on the ready jobs of jobs whose queue's limit is
// reached; a reason already set is kept.
func fillQueueHeld(usage []store.LimitUsage, jobs []*Job) {
	reasons := queueHeldReasons(usage)
	if len(reasons) == 0 {
		return
	}
	for _, j := range jobs {
		if j != nil && j.Status == StatusPending && j.Held == "" {
			j.Held = reasons[store.QueueOf(j.Queue)]
		}
	}
}
