// Package no_tasks is a golden case: a package whose directives are all
// gone but which still has a queuemax_gen.go, which shrinks to an empty
// registry.
package no_tasks
