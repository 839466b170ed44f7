// Package deploy holds the tests of the deployment assets in the
// repository's deploy/ directory (no code of its own):
//
//   - manifests_test.go parses every manifest: the compose files (yaml),
//     the Kubernetes objects in deploy/k8s (yaml: kinds, the headless
//     service, readiness on /readyz, the PodDisruptionBudget) and the
//     systemd unit (ini sections and keys), and checks that every SLUICE_*
//     variable they set names a key node/config knows.
//   - docker_test.go (SLUICE_DOCKER=1, `make test-docker`) starts
//     deploy/compose.yaml as the compose project sluice-test from the image
//     `make image` built, and checks it with real clients: franz-go and
//     kcat from the host (EXTERNAL listeners on 127.0.0.1:19092-19094),
//     bin/sluice as a client in another container on the network
//     (INTERNAL listeners), while it kills and restarts a leader's
//     container (docker kill, SIGKILL) and disconnects one from the
//     network and reconnects it; every acknowledged record must then be
//     read back once and in order. It also checks that a container given
//     a volume of another cluster exits with the reason.
//   - failover_test.go (SLUICE_DOCKER=1 SLUICE_DOCKER_FAULTS=N) measures
//     time to writable over N leader kills and N network disconnects
//     (p50, p99), then checks every acknowledged record.
//   - loss_test.go (SLUICE_DOCKER=1 SLUICE_DOCKER_LOSS=<seconds>, root)
//     drops 2% of each node's packets each way (iptables -m statistic
//     inside the container's network namespace) under an acks=all load:
//     produce keeps completing, the ISR shrinks at most twice a minute,
//     nothing acknowledged is lost. Delay (tc netem) is not there yet:
//     the development machine's kernel has no sch_netem.
//
// The soak across these containers (`sluice soak --docker`, every fault
// of separate hosts, the soak's checker) is tools/soak's docker backend;
// make test-docker runs its TestSoakDocker after TestDocker.
//
// Containers share the host's clock, so nothing here depends on clocks
// agreeing; waits are on conditions with deadlines.
package deploy
