// Package scale is the worker pool's autoscaling policy: given the current
// number of workers and the pending backlog it returns how many workers there
// should be. It is pure: it reads no clock and starts nothing; the pool calls
// [Policy.Target] every CheckInterval and applies the result.
//
// The rule is queue-max's: scale up in proportion to the backlog, down by one
// worker at a time, and not at all within Cooldown of the last change. Unlike
// queue-max, a pool outside [Min, Max] (for example one started with fewer
// than Min workers) is brought inside the range at once.
//
// Not API: import github.com/queuemax/queuemax instead. Its documentation is
// the reference for the root package's Autoscale, which aliases Policy:
// go doc github.com/queuemax/queuemax/runtime/scale.Policy.
package scale

import (
	"fmt"
	"time"
)

// Defaults for zero Policy fields, as in queue-max's WorkerPool.
const (
	// DefaultMin is the default Policy.Min.
	DefaultMin = 1
	// DefaultMax is the default Policy.Max.
	DefaultMax = 10
	// DefaultUpThreshold is the default Policy.UpThreshold.
	DefaultUpThreshold = 100
	// DefaultDownThreshold is the default Policy.DownThreshold.
	DefaultDownThreshold = 10
	// DefaultCheckInterval is the default Policy.CheckInterval.
	DefaultCheckInterval = 60 * time.Second
	// DefaultCooldown is the default Policy.Cooldown.
	DefaultCooldown = 30 * time.Second
)

// Policy decides the size of an autoscaled worker pool. Every field's zero
// value means its default; see [Policy.WithDefaults].
type Policy struct {
	// Min is the fewest workers. Zero means 1.
	Min int
	// Max is the most workers. Zero means 10, or Min if that is larger.
	Max int
	// UpThreshold is the backlog above which the pool grows, by one worker
	// per UpThreshold pending jobs (at least one). Zero means 100.
	UpThreshold int64
	// DownThreshold is the backlog below which the pool shrinks by one
	// worker. Zero means 10, or UpThreshold if that is smaller.
	DownThreshold int64
	// CheckInterval is how often the pool evaluates the policy. Zero means
	// 60s.
	CheckInterval time.Duration
	// Cooldown is how long after a change the pool makes no other change
	// (except bringing the size inside [Min, Max]). Zero means 30s.
	Cooldown time.Duration
}

// WithDefaults returns a copy of p with every zero field set to its default.
func (p Policy) WithDefaults() Policy {
	if p.Min == 0 {
		p.Min = DefaultMin
	}
	if p.Max == 0 {
		p.Max = max(DefaultMax, p.Min)
	}
	if p.UpThreshold == 0 {
		p.UpThreshold = DefaultUpThreshold
	}
	if p.DownThreshold == 0 {
		p.DownThreshold = min(DefaultDownThreshold, p.UpThreshold)
	}
	if p.CheckInterval == 0 {
		p.CheckInterval = DefaultCheckInterval
	}
	if p.Cooldown == 0 {
		p.Cooldown = DefaultCooldown
	}
	return p
}

// Validate reports the first invalid field of p.WithDefaults(), naming it:
// negative values, Max < Min, or DownThreshold > UpThreshold.
func (p Policy) Validate() error {
	p = p.WithDefaults()
	switch {
	case p.Min < 0:
		return fmt.Errorf("queuemax: scale policy: Min must be at least 1 (0 means %d), got %d", DefaultMin, p.Min)
	case p.Max < 0:
		return fmt.Errorf("queuemax: scale policy: Max must be at least 1 (0 means %d), got %d", DefaultMax, p.Max)
	case p.Max < p.Min:
		return fmt.Errorf("queuemax: scale policy: Max (%d) must not be less than Min (%d)", p.Max, p.Min)
	case p.UpThreshold < 0:
		return fmt.Errorf("queuemax: scale policy: UpThreshold must be at least 1 (0 means %d), got %d", DefaultUpThreshold, p.UpThreshold)
	case p.DownThreshold < 0:
		return fmt.Errorf("queuemax: scale policy: DownThreshold must be at least 1 (0 means %d), got %d", DefaultDownThreshold, p.DownThreshold)
	case p.DownThreshold > p.UpThreshold:
		return fmt.Errorf("queuemax: scale policy: DownThreshold (%d) must not exceed UpThreshold (%d)", p.DownThreshold, p.UpThreshold)
	case p.CheckInterval < 0:
		return fmt.Errorf("queuemax: scale policy: CheckInterval must be positive (0 means %v), got %v", DefaultCheckInterval, p.CheckInterval)
	case p.Cooldown < 0:
		return fmt.Errorf("queuemax: scale policy: Cooldown must not be negative (0 means %v), got %v", DefaultCooldown, p.Cooldown)
	}
	return nil
}

// Target returns how many workers the pool should have, given current
// workers, pending jobs in the backlog, and the time since the pool last
// changed size (hadAction is false if it never has, and then there is no
// cooldown). Zero fields of p mean their defaults; p should be valid.
//
// A current size outside [Min, Max] is first clamped into it, regardless of
// the cooldown. Then, unless within Cooldown of the last change:
//
//   - pending > UpThreshold: min(Max, size + max(1, pending/UpThreshold));
//   - pending < DownThreshold: max(Min, size − 1);
//   - otherwise the size is kept.
//
// The pool should record a change (and restart the cooldown) whenever the
// result differs from current.
func (p Policy) Target(current int, pending int64, sinceLastAction time.Duration, hadAction bool) int {
	p = p.WithDefaults()
	size := min(max(current, p.Min), p.Max)
	if hadAction && sinceLastAction < p.Cooldown {
		return size
	}
	switch {
	case pending > p.UpThreshold && size < p.Max:
		step := max(1, pending/p.UpThreshold)
		if step >= int64(p.Max-size) { // also keeps size+step from overflowing
			return p.Max
		}
		return size + int(step)
	case pending < p.DownThreshold && size > p.Min:
		return size - 1
	}
	return size
}
