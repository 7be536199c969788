package coordinate

import (
	"math"
	"strconv"
	"testing"
	"time"
)

func TestClampGetWorkLease(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want time.Duration
	}{
		{0, 300 * time.Second}, {0.5, 300 * time.Second}, {-5, 300 * time.Second},
		{86401, 300 * time.Second}, {math.NaN(), 300 * time.Second}, {math.Inf(1), 300 * time.Second},
		{1, time.Second}, {1.5, 1500 * time.Millisecond}, {900, 900 * time.Second}, {86400, 86400 * time.Second},
	} {
		if got := ClampGetWorkLease(tc.in); got != tc.want {
			t.Errorf("ClampGetWorkLease(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestClampRenewLease(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want time.Duration
	}{
		{86401, 300 * time.Second}, {math.NaN(), 300 * time.Second}, {math.Inf(1), 300 * time.Second},
		{0, 0}, {-1, -time.Second}, {0.5, 500 * time.Millisecond}, {86400, 86400 * time.Second},
		{math.Inf(-1), -86400 * time.Second},
	} {
		if got := ClampRenewLease(tc.in); got != tc.want {
			t.Errorf("ClampRenewLease(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestClampWorkerExpire(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want time.Duration
		msg  string
	}{
		{6000, 6000 * time.Second, ""},
		{0, 0, ""},
		{86400, 86400 * time.Second, ""},
		{-5, 300 * time.Second, "negative expire time -5 defaulted to 5 minutes"},
		{-0.5, 300 * time.Second, "negative expire time -0.5 defaulted to 5 minutes"},
		{100000, time.Hour, "huge expire time 100000 defaulted to one hour"},
	} {
		got, msg := ClampWorkerExpire(tc.in, strconv.FormatFloat(tc.in, 'g', -1, 64))
		if got != tc.want || msg != tc.msg {
			t.Errorf("ClampWorkerExpire(%v) = %v, %q; want %v, %q", tc.in, got, msg, tc.want, tc.msg)
		}
	}
}

func TestContinuousKey(t *testing.T) {
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{time.Unix(1447264023, 120_000_000), "1447264023.120"},
		{time.Unix(1447264023, 5_999_999), "1447264023.005"},
		{time.Unix(1447264023, 0), "1447264023.000"},
	} {
		if got := ContinuousKey(tc.at); got != (Name{Bytes: tc.want}) {
			t.Errorf("ContinuousKey(%v) = %#v, want %q", tc.at, got, tc.want)
		}
	}
}

func TestRequestedLeaseThenClamp(t *testing.T) {
	for _, tc := range []struct {
		sec  float64
		want time.Duration
	}{
		{10, 10 * time.Second}, {86400, 86400 * time.Second}, {86401, DefaultLease},
		{1e300, DefaultLease}, {math.NaN(), DefaultLease}, {math.Inf(1), DefaultLease},
		{-5, -5 * time.Second}, {-1e300, -MaxLease}, {math.Inf(-1), -MaxLease},
	} {
		if got := ClampRenewLease(RequestedLease(tc.sec).Seconds()); got != tc.want {
			t.Errorf("lease_time %v: %v, want %v (as ClampRenewLease(%v) = %v)", tc.sec, got, tc.want, tc.sec, ClampRenewLease(tc.sec))
		}
	}
}
