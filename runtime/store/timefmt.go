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
func FormatTime(t time.Time) string {
	var buf [len(TimeLayout)]byte
	return string(AppendTime(buf[:0], t))
}

// AppendTime appends t in TimeLayout to b. Years outside 0–9999 take
// time.Format's path.
func AppendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, TimeLayout)
	}
	hour, min, sec := t.Clock()
	ms := t.Nanosecond() / int(time.Millisecond)
	return append(b,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-',
		byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':',
		byte('0'+min/10), byte('0'+min%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// ParseTime parses either stored form; it returns the zero time for an empty
// or unparsable string.
func ParseTime(s string) time.Time {
	if t, ok := parseISO(s); ok {
		return t
	}
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

// ParseTimeBytes is ParseTime for a column read as bytes, without
// converting the common TimeLayout form to a string.
func ParseTimeBytes(b []byte) time.Time {
	if t, ok := parseISO(b); ok {
		return t
	}
	return ParseTime(string(b))
}

// parseISO parses exactly TimeLayout (what queuemax writes) without
// time.Parse; anything else reports false.
func parseISO[T string | []byte](s T) (time.Time, bool) {
	if len(s) != len(TimeLayout) || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
		s[16] != ':' || s[19] != '.' || s[23] != 'Z' {
		return time.Time{}, false
	}
	ok := true
	num := func(i, n int) int {
		v := 0
		for k := i; k < i+n; k++ {
			c := s[k]
			if c < '0' || c > '9' {
				ok = false
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	year, month, day := num(0, 4), num(5, 2), num(8, 2)
	hour, min, sec, ms := num(11, 2), num(14, 2), num(17, 2), num(20, 3)
	if !ok || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, min, sec, ms*int(time.Millisecond), time.UTC)
	if t.Day() != day {
		return time.Time{}, false // 31 November: time.Parse rejects it too
	}
	return t, true
}
