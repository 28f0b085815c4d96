package store

import (
	"math/rand/v2"
	"testing"
	"time"
)

// The fast paths of FormatTime and ParseTime must agree with time.Format
// and time.Parse on every input.
func TestTimeFormatMatchesTimePackage(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	times := []time.Time{
		{},
		time.Date(2026, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
		time.Date(2024, 2, 29, 12, 0, 0, 500_000, time.FixedZone("x", -5*3600)),
	}
	for range 2000 {
		times = append(times, time.Unix(r.Int64N(1<<36)-1<<35, r.Int64N(1e9)))
	}
	for _, tm := range times {
		want := tm.UTC().Format(TimeLayout)
		if got := FormatTime(tm); got != want {
			t.Fatalf("FormatTime(%v) = %q, want %q", tm, got, want)
		}
		parsed, err := time.Parse(TimeLayout, want)
		if err != nil {
			continue // a year time.Parse cannot read back
		}
		if got := ParseTime(want); !got.Equal(parsed) || got.Location() != time.UTC {
			t.Fatalf("ParseTime(%q) = %v, want %v", want, got, parsed)
		}
		if got := ParseTimeBytes([]byte(want)); !got.Equal(parsed) {
			t.Fatalf("ParseTimeBytes(%q) = %v, want %v", want, got, parsed)
		}
	}
	for _, s := range []string{"", "x", "2026-11-31T00:00:00.000Z", "2026-02-30T00:00:00.000Z", "2026-13-01T00:00:00.000Z",
		"2026-01-01T24:00:00.000Z", "2026-01-01T00:00:00.00aZ", "2026-01-01 10:00:00", "2026-01-01T10:00:00.123456Z",
		"2026-01-01T10:00:00+02:00", "+026-01-01T00:00:00.000Z"} {
		var want time.Time
		for _, layout := range []string{TimeLayout, time.RFC3339Nano, legacyLayout} {
			if tm, err := time.Parse(layout, s); err == nil {
				want = tm.UTC()
				break
			}
		}
		if got := ParseTime(s); !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, want %v", s, got, want)
		}
		if got := ParseTimeBytes([]byte(s)); !got.Equal(want) {
			t.Errorf("ParseTimeBytes(%q) = %v, want %v", s, got, want)
		}
	}
}

func BenchmarkParseTime(b *testing.B) {
	s := FormatTime(time.Now())
	for b.Loop() {
		ParseTime(s)
	}
}

func BenchmarkFormatTime(b *testing.B) {
	now := time.Now()
	for b.Loop() {
		FormatTime(now)
	}
}
