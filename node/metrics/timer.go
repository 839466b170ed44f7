package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Kafka's timers and histograms (Yammer) report the 50th, 75th, 95th, 98th,
// 99th and 999th percentiles; jmx_exporter (Strimzi's rules: quantile
// "0.$N" of the attribute NthPercentile) labels them "0.50", "0.75", "0.95",
// "0.98", "0.99" and "0.999". A Prometheus summary would print the first as
// "0.5", so a query for quantile="0.50" would find nothing: timer keeps the
// summary for its estimate and exports what jmx_exporter does.
var kafkaQuantiles = []struct {
	q, err float64
	label  string
}{
	{0.5, 0.05, "0.50"}, {0.75, 0.02, "0.75"}, {0.95, 0.005, "0.95"},
	{0.98, 0.002, "0.98"}, {0.99, 0.001, "0.99"}, {0.999, 0.0001, "0.999"},
}

// timer is a family of Kafka timers in milliseconds, one per value of its
// label (or one without a label), exported as jmx_exporter exports a Kafka
// histogram:
//
//	<name>{<label>,quantile="0.50"|...|"0.999"}  gauge, ms over the last 5 minutes
//	<name>_count{<label>}                        counter, observations
//	<name>_sum{<label>}                          counter, ms observed
//
// Its series exist from the start, with NaN quantiles until observed.
type timer struct {
	quantile, count, sum *prometheus.Desc
	values               []string // label values, by child; nil: no label
	children             []prometheus.Summary
}

// newTimer builds a timer family; label "" means no label.
func newTimer(name, help, label string, values []string) *timer {
	var labels []string
	if label != "" {
		labels = []string{label}
	} else {
		values = []string{""}
	}
	objectives := map[float64]float64{}
	for _, q := range kafkaQuantiles {
		objectives[q.q] = q.err
	}
	t := &timer{
		quantile: prometheus.NewDesc(name, help+" Quantiles (ms) over the last 5 minutes.", append(labels, "quantile"), nil),
		count:    prometheus.NewDesc(name+"_count", help+" Observations.", labels, nil),
		sum:      prometheus.NewDesc(name+"_sum", help+" Milliseconds observed.", labels, nil),
	}
	if label != "" {
		t.values = values
	}
	for range values {
		t.children = append(t.children, prometheus.NewSummary(prometheus.SummaryOpts{
			Name: name, Help: help, Objectives: objectives, MaxAge: 5 * time.Minute, AgeBuckets: 2,
		}))
	}
	return t
}

// child returns the observer of the i-th label value.
func (t *timer) child(i int) prometheus.Observer { return t.children[i] }

func (t *timer) Describe(ch chan<- *prometheus.Desc) {
	ch <- t.quantile
	ch <- t.count
	ch <- t.sum
}

func (t *timer) Collect(ch chan<- prometheus.Metric) {
	var m dto.Metric
	for i, s := range t.children {
		m.Reset()
		if err := s.Write(&m); err != nil {
			continue
		}
		var lv []string
		if t.values != nil {
			lv = []string{t.values[i]}
		}
		for _, q := range m.GetSummary().GetQuantile() {
			ch <- prometheus.MustNewConstMetric(t.quantile, prometheus.GaugeValue, q.GetValue(), append(lv, quantileLabel(q.GetQuantile()))...)
		}
		ch <- prometheus.MustNewConstMetric(t.count, prometheus.CounterValue, float64(m.GetSummary().GetSampleCount()), lv...)
		ch <- prometheus.MustNewConstMetric(t.sum, prometheus.CounterValue, m.GetSummary().GetSampleSum(), lv...)
	}
}

// quantileLabel is Kafka's spelling of quantile q.
func quantileLabel(q float64) string {
	for _, k := range kafkaQuantiles {
		if k.q == q {
			return k.label
		}
	}
	return strconv.FormatFloat(q, 'f', -1, 64)
}
