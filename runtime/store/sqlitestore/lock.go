package sqlitestore

// lockName is the lock file Open holds while it creates or checks shard
// files in a new data directory: flock(2) on Unix, LockFileEx on Windows.
// Elsewhere (plan9, wasip1, js) lockDir takes no lock, so two processes
// creating one new data directory at the same moment there may disagree
// about its shard count; opening an existing directory needs no lock.
const lockName = ".queuemax.lock"

// lockSupported reports whether lockDir excludes other processes on this
// platform.
const lockSupported = lockExcludes
