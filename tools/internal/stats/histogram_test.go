package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestBucketsAreMonotonicAndTight(t *testing.T) {
	prev := -1
	for us := uint64(0); us < 1<<22; us += 1 + us/97 {
		b := bucketOf(us)
		if b < prev {
			t.Fatalf("bucketOf(%d) = %d, below bucketOf of a smaller value (%d)", us, b, prev)
		}
		prev = b
		v := bucketValue(b)
		if us < histLinear && v != float64(us) {
			t.Fatalf("below %d µs buckets are exact: bucketValue(bucketOf(%d)) = %v", histLinear, us, v)
		}
		if rel := math.Abs(v-float64(us)) / math.Max(float64(us), 1); rel > 1.0/histSub {
			t.Fatalf("bucketOf(%d) stands for %v: %.1f%% off (limit %.1f%%)", us, v, rel*100, 100.0/histSub)
		}
	}
}

// TestQuantilesMatchSortedSamples compares the histogram's percentiles with
// the exact nearest-rank percentiles of the same samples.
func TestQuantilesMatchSortedSamples(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	var us []float64
	for i := 0; i < 100000; i++ {
		// Log-normal-ish latencies from 10 µs to ~1 s.
		v := math.Exp(r.NormFloat64()*1.5 + 7)
		d := time.Duration(v * float64(time.Microsecond))
		h.Record(d)
		us = append(us, float64(d/time.Microsecond))
	}
	slices.Sort(us)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		exact := us[int(math.Ceil(q*float64(len(us))))-1] / 1000
		got := h.Quantile(q)
		if math.Abs(got-exact) > exact/histSub+0.001 {
			t.Errorf("p%v = %.4f ms, exact %.4f ms", q*100, got, exact)
		}
	}
	s := h.Summary()
	if s.Count != 100000 || s.Max != us[len(us)-1]/1000 {
		t.Errorf("summary %+v: want count 100000, max %.3f", s, us[len(us)-1]/1000)
	}
	if !(s.P50 <= s.P95 && s.P95 <= s.P99 && s.P99 <= s.P999 && s.P999 <= s.Max) {
		t.Errorf("percentiles out of order: %+v", s)
	}
}

func TestQuantileSmallCounts(t *testing.T) {
	var h Histogram
	if h.Quantile(0.99) != 0 || h.Summary() != (Latency{}) {
		t.Fatal("an empty histogram reads as zero")
	}
	for _, ms := range []int{1, 2, 3, 4, 100} {
		h.Record(time.Duration(ms) * time.Millisecond)
	}
	// Nearest rank of 5 samples: p50 is the 3rd, p99 the 5th.
	if got := h.Quantile(0.5); math.Abs(got-3) > 3.0/histSub {
		t.Errorf("p50 of {1,2,3,4,100} ms = %v, want ~3", got)
	}
	if got := h.Quantile(0.99); got != 100 {
		t.Errorf("p99 of {1,2,3,4,100} ms = %v, want 100 (capped at the max)", got)
	}
	if got := h.Summary().Avg; got != 22 {
		t.Errorf("avg = %v, want 22", got)
	}
	h.Record(-time.Second)
	if h.Quantile(0) != 0 {
		t.Error("a negative latency counts as 0")
	}
}

func TestRecordConcurrently(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10000; i++ {
				h.Record(time.Duration(i) * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	if h.Count() != 80000 || h.Summary().Max != 9.999 {
		t.Fatalf("count %d max %v: want 80000 and 9.999 ms", h.Count(), h.Summary().Max)
	}
}
