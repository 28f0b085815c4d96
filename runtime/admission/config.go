package admission

import (
	"fmt"
	"maps"
	"slices"

	"github.com/queuemax/queuemax/runtime/store"
)

// CheckQueues validates queuemax.Config.Queues (each named queue's
// MaxWorkers) against workers, the fewest workers the pool may have
// (workersField names it: Workers, or Autoscale.Min when autoscaling).
// It returns the Config field at fault and why, or "" when the queues are
// valid.
func CheckQueues(queues map[string]int, workers int, workersField string) (field, msg string) {
	sum := 0
	for _, name := range slices.Sorted(maps.Keys(queues)) {
		maxWorkers := queues[name]
		field := fmt.Sprintf("Queues[%q]", name)
		if name == store.DefaultQueue {
			return field, "the default queue is not configured: it gets the workers the named queues leave (Workers minus their MaxWorkers)"
		}
		if err := store.CheckQueueName(name); err != nil {
			return field, err.Error()
		}
		if maxWorkers < 1 {
			return field, fmt.Sprintf("MaxWorkers %d: must be at least 1 (pause a queue with Client.Pause, or leave it out)", maxWorkers)
		}
		sum += maxWorkers
	}
	if sum >= workers {
		return "Queues", fmt.Sprintf("the named queues take %d workers of %s %d: the default queue needs at least 1", sum, workersField, workers)
	}
	return "", ""
}
