// Package queuemaxtype holds the types that the root package
// github.com/queuemax/queuemax re-exports (Job, JobID, Status, Priority,
// DeadLetter, ShardStats, JobCount, CleanupResult and RecoverResult), with
// their full documentation: read this package with go doc to see their
// fields and methods. Programs normally write queuemax.Job and so on, which
// are aliases of the types here; the storage layer (runtime/store) aliases
// them too, so every store implementation shares them.
//
// Like River's rivertype, it is a leaf package: it imports only the standard
// library, so any package may depend on it without cycles.
package queuemaxtype
