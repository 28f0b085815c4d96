package store

import "time"

// TimeLayout is the ISO-Z text form of every timestamp queuemax writes: UTC,
// exactly three fractional digits and a literal Z, so that lexicographic
// order equals chronological order (queue-max's format).
const TimeLayout = "2006-01-02T15:04:05.000Z"

// legacyLayout is SQLite's CURRENT_TIMESTAMP form, which queue-max's column
// defaults write.
const legacyLayout = "2006-01-02 15:04:05"

// FormatTime returns t in TimeLayout.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ParseTime parses either stored form; it returns the zero time for an empty
// or unparsable string.
func ParseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	for _, layout := range []string{TimeLayout, time.RFC3339Nano, legacyLayout} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}
