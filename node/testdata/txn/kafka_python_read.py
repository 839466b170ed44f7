"""A reader on python3-kafka (kafka-python 2.0.2), for node's
TestTxnClients. kafka-python 2.0.2 has no transactional producer and no
isolation_level setting (its fetcher always asks for read_uncommitted;
2.1 added read_committed): it only reads what others wrote in
transactions, aborted records included.

Usage: kafka_python_read.py BOOTSTRAP TOPIC WANT

Reads TOPIC from the earliest offsets without a group until WANT printable
records arrived (2.0.2 hands the commit and abort markers, control
records, to the application as records too), then polls once more for stragglers, and prints each value on
its own line (a value that is not printable text, such as a control
record's, as "nonprintable:HEX"). Exits 1 when WANT are not there
within 60 s.
"""
import sys
import time

from kafka import KafkaConsumer

bootstrap, topic, want = sys.argv[1:4]
want = int(want)
c = KafkaConsumer(topic, bootstrap_servers=bootstrap.split(","), group_id=None,
                  auto_offset_reset="earliest", enable_auto_commit=False,
                  fetch_max_wait_ms=100)
got = []


def show(v):
    s = v.decode(errors="replace")
    return s if s.isprintable() else "nonprintable:" + v.hex()


deadline = time.time() + 60
def data():
    return sum(1 for v in got if not v.startswith("nonprintable:"))


while data() < want and time.time() < deadline:
    for records in c.poll(timeout_ms=200).values():
        got.extend(show(m.value) for m in records)
for records in c.poll(timeout_ms=1000).values():
    got.extend(show(m.value) for m in records)
c.close()
for v in got:
    print(v)
sys.exit(0 if data() >= want else 1)
