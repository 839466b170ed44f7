package config

import (
	"math"
	"time"
)

// QuotaWindow is how client quotas are measured (Kafka's
// quota.window.num and quota.window.size.seconds): a rate over Num
// samples of Size each; a throttle lasts at most one Size.
type QuotaWindow struct {
	Num  int32
	Size time.Duration
}

// quotaKeys are the client-quota measurement keys; the quotas themselves
// are dynamic (AlterClientQuotas, `sluice configs --entity-type users`).
var quotaKeys = []key{
	{"quota.window.num", "11", "the number of samples client quotas are measured over", func(c *Config, v string) error {
		return parseInt32(&c.Quota.Num, v, 1, math.MaxInt32)
	}},
	{"quota.window.size.seconds", "1", "the time span of each client-quota sample; the longest a client is throttled for one request", func(c *Config, v string) error {
		var s int32
		if err := parseInt32(&s, v, 1, math.MaxInt32); err != nil {
			return err
		}
		c.Quota.Size = time.Duration(s) * time.Second
		return nil
	}},
}
