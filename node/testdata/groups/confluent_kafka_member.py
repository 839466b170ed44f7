"""A consumer group member on python3-confluent-kafka (librdkafka), for
node's TestGroupClientsPython.

Usage: confluent_kafka_member.py BOOTSTRAP GROUP TOPIC CLIENT_ID

Prints "PARTITION OFFSET VALUE" for every record it consumes, then stores
the record's offset: auto commit (every 200 ms) commits only what was
printed. On SIGTERM it closes the consumer, which commits what is stored
and leaves the group, and exits 0. Errors go to standard error as ERROR.
"""
import signal
import sys

from confluent_kafka import Consumer

bootstrap, group, topic, client_id = sys.argv[1:5]
running = True


def stop(*_):
    global running
    running = False


signal.signal(signal.SIGTERM, stop)
c = Consumer({
    "bootstrap.servers": bootstrap,
    "group.id": group,
    "client.id": client_id,
    "auto.offset.reset": "earliest",
    "enable.auto.offset.store": False,
    "auto.commit.interval.ms": 200,
    "session.timeout.ms": 10000,
    "heartbeat.interval.ms": 500,
    "fetch.wait.max.ms": 100,
})
c.subscribe([topic])
while running:
    m = c.poll(0.1)
    if m is None:
        continue
    if m.error():
        print("ERROR", m.error(), file=sys.stderr, flush=True)
        continue
    print(m.partition(), m.offset(), m.value().decode(), flush=True)
    c.store_offsets(m)
c.close()
