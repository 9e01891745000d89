package audit

import (
	"testing"
	"time"
)

// appendTime writes exactly what time.RFC3339Nano does: fractions with
// and without trailing zeros, whole seconds, zones east and west of UTC
// and across a daylight-saving change, years at the format's edges.
func TestAppendTimeIsRFC3339Nano(t *testing.T) {
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("", 5*3600+30*60), time.FixedZone("W", -7*3600)}
	if ny, err := time.LoadLocation("America/New_York"); err == nil {
		zones = append(zones, ny)
	}
	base := []time.Time{
		time.Date(2026, 12, 1, 9, 54, 34, 0, time.UTC),
		time.Date(2026, 12, 1, 9, 54, 34, 1, time.UTC),
		time.Date(2026, 12, 1, 9, 54, 34, 120000000, time.UTC),
		time.Date(2026, 12, 1, 9, 54, 34, 999999999, time.UTC),
		time.Date(2026, 3, 8, 6, 59, 59, 500, time.UTC), // New York's clocks go forward at 07:00 UTC
		time.Date(2026, 3, 8, 7, 0, 0, 500, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 5, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 5, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 5, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 5, time.UTC),
		time.Now(),
	}
	for _, b := range base {
		for _, z := range zones {
			for _, tm := range []time.Time{b.In(z), b.In(z).Add(time.Nanosecond), b.In(z).Add(time.Second)} {
				// Twice: the second finds the second's prefix kept.
				for range 2 {
					if got, want := string(appendTime([]byte("x"), tm)), "x"+tm.Format(time.RFC3339Nano); got != want {
						t.Fatalf("appendTime(%v) = %s, want %s", tm, got, want)
					}
				}
			}
		}
	}
}
