"""A consumer group member on python3-kafka (kafka-python), for node's
TestGroupClientsPython.

Usage: kafka_python_member.py BOOTSTRAP GROUP TOPIC CLIENT_ID

Prints "PARTITION OFFSET VALUE" for every record poll returns; auto
commit (every 200 ms) commits the positions poll reached, which are
printed before the next poll. On SIGTERM it closes the consumer, which
commits and leaves the group, and exits 0.
"""
import signal
import sys

from kafka import KafkaConsumer

bootstrap, group, topic, client_id = sys.argv[1:5]
running = True


def stop(*_):
    global running
    running = False


signal.signal(signal.SIGTERM, stop)
c = KafkaConsumer(
    topic,
    bootstrap_servers=bootstrap.split(","),
    group_id=group,
    client_id=client_id,
    auto_offset_reset="earliest",
    enable_auto_commit=True,
    auto_commit_interval_ms=200,
    session_timeout_ms=10000,
    heartbeat_interval_ms=500,
    fetch_max_wait_ms=100,
)
while running:
    for tp, records in c.poll(timeout_ms=100).items():
        for m in records:
            print(m.partition, m.offset, m.value.decode(), flush=True)
c.close()
