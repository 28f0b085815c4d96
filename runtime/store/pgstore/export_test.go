package pgstore

// MigrationCount is how many migrations this binary knows; the numbers may
// have gaps (a branch's migration keeps the number it was given).
var MigrationCount = len(migrations)
