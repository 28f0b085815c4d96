package pgstore

// Queue limits: a claim round claims a limited queue apart (capped by the
// starts its limit granted) and the rest with ClaimParams.SkipQueues, which
// leaves the limited queues out like paused ones (claimSQL with skip).
