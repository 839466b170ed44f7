package deploy

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestDockerFailover measures failover on the compose cluster: with
// SLUICE_DOCKER=1 and SLUICE_DOCKER_FAULTS=N it SIGKILLs the leader of a
// partition N times (docker kill, then docker start and a whole ISR) and
// disconnects a leader from the network N times (reconnected the same
// way), under an idempotent acks=all producer from the host, logs the time
// to writable after each fault with p50 and p99, and checks every
// acknowledged record afterwards. Not part of make test-docker.
func TestDockerFailover(t *testing.T) {
	skipUnlessDocker(t)
	faults, _ := strconv.Atoi(os.Getenv("SLUICE_DOCKER_FAULTS"))
	if faults <= 0 {
		t.Skip("set SLUICE_DOCKER_FAULTS=N (e.g. 10) to measure failover over N kills and N disconnects")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(faults)*2*time.Minute+5*time.Minute)
	defer cancel()
	d := startCluster(t, ctx)
	const topic, partitions = "failover", 3
	cl, adm := ackedTopic(t, ctx, topic, partitions)
	var w workload
	wctx, stop := context.WithCancel(ctx)
	wdone := make(chan struct{})
	go func() { defer close(wdone); w.run(wctx, cl, topic, partitions) }()
	defer func() { stop(); <-wdone }()

	var kills, cuts []time.Duration
	for i := range faults {
		p := int32(i % partitions)
		ttw := killLeader(t, ctx, d, adm, &w, topic, p)
		kills = append(kills, ttw)
		t.Logf("kill %d (leader of partition %d): writable after %v", i+1, p, ttw.Round(time.Millisecond))
	}
	for i := range faults {
		p := int32(i % partitions)
		ttw := disconnectLeader(t, ctx, d, adm, &w, topic, p)
		cuts = append(cuts, ttw)
		t.Logf("disconnect %d (leader of partition %d): writable after %v", i+1, p, ttw.Round(time.Millisecond))
	}
	stop()
	<-wdone
	checkAcked(t, ctx, &w, topic, partitions)
	t.Logf("time to writable after docker kill of a leader, %d faults: %s", len(kills), percentiles(kills))
	t.Logf("time to writable after a network disconnect of a leader, %d faults: %s", len(cuts), percentiles(cuts))
}

// disconnectLeader disconnects the container of partition p's leader from
// the network, waits until p takes writes under another leader, reconnects
// it with its address and name, and waits until it is healthy and every
// ISR whole; it returns the time from the disconnect command to the first
// acknowledgement on p of a record sent after the command returned.
func disconnectLeader(t *testing.T, ctx context.Context, d *dockerCluster, adm *kadm.Client, w *workload, topic string, p int32) time.Duration {
	t.Helper()
	ps, err := partitionState(ctx, adm, topic)
	if err != nil {
		t.Fatal(err)
	}
	leader := int(ps[p].Leader)
	id := d.container(ctx, leader)
	ip := d.docker(ctx, "inspect", "-f", fmt.Sprintf(`{{(index .NetworkSettings.Networks %q).IPAddress}}`, d.net), id)
	start := time.Now()
	d.docker(ctx, "network", "disconnect", d.net, id)
	cut := time.Now()
	waitFor(t, ctx, 2*time.Minute, fmt.Sprintf("partition %d writable without its leader %d", p, leader), func() (bool, string) {
		n, _ := w.ackedSince(p, cut)
		ps, err := partitionState(ctx, adm, topic)
		if err != nil {
			return false, err.Error()
		}
		return n > 0 && int(ps[p].Leader) != leader, fmt.Sprintf("%d acks since, leader %d", n, ps[p].Leader)
	})
	_, first := w.ackedSince(p, cut)
	d.docker(ctx, "network", "connect", "--ip", ip, "--alias", fmt.Sprintf("sluice-%d", leader), d.net, id)
	d.waitHealthy(ctx, leader)
	waitFullISR(t, ctx, adm, topic)
	return first.Sub(start)
}

// percentiles formats p50, p99 and max of ds (nearest rank).
func percentiles(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration {
		i := int(q*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return fmt.Sprintf("p50 %v, p99 %v, min %v, max %v", at(0.5).Round(time.Millisecond), at(0.99).Round(time.Millisecond), s[0].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}
