package soak

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// replaceVoter is host-loss for a controller (a Raft voter): the host is
// lost with its disk, and replaced the way KIP-853 replaces a controller
// (quorum/voters.go, docs/deploy.md): the lost voter removed from the
// quorum (RemoveRaftVoter, as `sluice cluster remove-controller`), a new
// host at the same address and with the same node id, its empty volume
// formatted without initial controllers (it joins as an observer instead
// of bootstrapping a quorum of its own), then added as a voter once caught
// up (AddRaftVoter, as `sluice cluster add-controller`). Same broker id:
// its replicas fill again from the leaders, no reassignment. Its effect:
// the node a voter again and in the ISR of every partition it holds.
func (f *faulter) replaceVoter(ctx context.Context, fl *Fault, old *dockerNode, hold time.Duration) error {
	d := f.hosts
	d.mu.Lock()
	d.replaced++
	name := fmt.Sprintf("%s-host-%d-r%d", d.project, old.id, d.replaced)
	n := &dockerNode{id: old.id, service: old.service, ip: old.ip, ports: old.ports, voter: true,
		volume: fmt.Sprintf("%s_host-%d-r%d", d.project, old.id, d.replaced)}
	d.mu.Unlock()
	fl.Nodes = []int32{old.id}
	fl.Target = fmt.Sprintf("controller %d (%s, %s, volume %s) lost with its disk; replaced by a new host at its address, same id, empty volume", old.id, old.service, old.ip, old.volume)
	rctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := command(rctx, "docker", "rm", "--force", "--volumes", old.container); err != nil {
		return err
	}
	fl.Start = time.Now()
	if old.volume != "" {
		if _, err := command(rctx, "docker", "volume", "rm", "--force", old.volume); err != nil {
			return err
		}
	}
	removed := time.Now()
	if err := f.voterChange(rctx, kmsg.NewPtrRemoveRaftVoterRequest(), old.id); err != nil {
		fl.NoEffect = fmt.Sprintf("voter %d not removed: %v", old.id, err)
		return err
	}
	took := time.Since(removed)
	wait(ctx, hold)
	for _, kv := range old.env {
		if strings.HasPrefix(kv, "SLUICE_INITIAL_CONTROLLERS=") {
			continue // a replacement never bootstraps a quorum
		}
		n.env = append(n.env, kv)
	}
	n.env = append(n.env, "SLUICE_SLUICE_FORMAT_NO_INITIAL_CONTROLLERS=true")
	if err := d.run(rctx, n, name); err != nil {
		return err
	}
	d.mu.Lock()
	for i, o := range d.nodes {
		if o == old {
			d.nodes[i] = n
		}
	}
	d.mu.Unlock()
	if err := d.waitReady(rctx, n, 2*time.Minute); err != nil {
		fl.NoEffect = err.Error()
		return err
	}
	if err := f.voterChange(rctx, kmsg.NewPtrAddRaftVoterRequest(), n.id); err != nil {
		fl.NoEffect = fmt.Sprintf("controller %d rejoined as an observer but was not added as a voter: %v", n.id, err)
		return err
	}
	synced := time.Now()
	in, err := f.inEveryISR(rctx, n.id)
	if err != nil {
		fl.NoEffect = fmt.Sprintf("controller %d a voter again, but not back in every ISR: %v", n.id, err)
		return err
	}
	fl.Effect = fmt.Sprintf("voter %d removed (%v), its replacement joined as an observer and was added back as a voter; in the ISR of its %d partitions %v after",
		old.id, took.Round(10*time.Millisecond), in, time.Since(synced).Round(10*time.Millisecond))
	return nil
}

// voterChange sends a RemoveRaftVoter or AddRaftVoter for id, retrying
// while the quorum elects a leader or the observer catches up.
func (f *faulter) voterChange(ctx context.Context, req kmsg.Request, id int32) error {
	var last error
	for {
		var code int16
		var msg *string
		var err error
		switch r := req.(type) {
		case *kmsg.RemoveRaftVoterRequest:
			r.VoterID = id
			var resp *kmsg.RemoveRaftVoterResponse
			if resp, err = r.RequestWith(ctx, f.cl); err == nil {
				code, msg = resp.ErrorCode, resp.ErrorMessage
			}
		case *kmsg.AddRaftVoterRequest:
			r.VoterID, r.TimeoutMillis, r.AckWhenCommitted = id, 30000, true
			var resp *kmsg.AddRaftVoterResponse
			if resp, err = r.RequestWith(ctx, f.cl); err == nil {
				code, msg = resp.ErrorCode, resp.ErrorMessage
			}
		}
		if err == nil {
			if err = kerr.ErrorForCode(code); err != nil && msg != nil {
				err = fmt.Errorf("%w: %s", err, *msg)
			}
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, kerr.VoterNotFound) && req.Key() == kmsg.RemoveRaftVoter.Int16():
			return nil // an earlier try removed it; its answer was lost
		case errors.Is(err, kerr.DuplicateVoter) && req.Key() == kmsg.AddRaftVoter.Int16():
			return nil
		}
		last = err
		if !wait(ctx, 500*time.Millisecond) {
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		}
	}
}

// inEveryISR waits until broker id is in the ISR of every partition that
// has a replica on it, and returns how many those are.
func (f *faulter) inEveryISR(ctx context.Context, id int32) (int, error) {
	for {
		md, err := f.adm.Metadata(ctx)
		if err == nil {
			held, behind := 0, 0
			for _, td := range md.Topics {
				for _, pd := range td.Partitions {
					if slices.Contains(pd.Replicas, id) {
						held++
						if !slices.Contains(pd.ISR, id) {
							behind++
						}
					}
				}
			}
			if behind == 0 {
				return held, nil
			}
			err = fmt.Errorf("%d of %d partitions without it in the ISR", behind, held)
		}
		if !wait(ctx, 500*time.Millisecond) {
			return 0, err
		}
	}
}

// run starts n as a new container name on the project's network at n's
// address and hostname, with n's ports, SLUICE_* environment and a new
// volume, labelled so that stop removes both.
func (d *dockerHosts) run(ctx context.Context, n *dockerNode, name string) error {
	label := "sluice.soak.project=" + d.project
	if _, err := command(ctx, "docker", "volume", "create", "--label", label, n.volume); err != nil {
		return err
	}
	d.mu.Lock()
	d.extraVolumes = append(d.extraVolumes, n.volume)
	d.mu.Unlock()
	args := []string{"run", "-d", "--name", name, "--label", label,
		"--hostname", n.service, "--network", d.network, "--ip", n.ip, "--network-alias", n.service,
		"-v", n.volume + ":/var/lib/sluice"}
	for _, p := range n.ports {
		args = append(args, "-p", p)
	}
	for _, kv := range n.env {
		if strings.HasPrefix(kv, "SLUICE_") {
			args = append(args, "-e", kv)
		}
	}
	out, err := command(ctx, "docker", append(args, d.image)...)
	if err != nil {
		return err
	}
	n.container = strings.TrimSpace(out)
	if is, err := dockerInspect(ctx, n.container); err == nil {
		n.pid = is.State.Pid
	}
	d.mu.Lock()
	d.extraContainers = append(d.extraContainers, n.container)
	d.mu.Unlock()
	return nil
}
