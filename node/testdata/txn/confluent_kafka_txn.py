"""Transactions on python3-confluent-kafka (librdkafka), for node's
TestTxnClients.

Usage: confluent_kafka_txn.py BOOTSTRAP DIRECT_TOPIC INPUT OUTPUT GROUP N

1. A transactional producer (init_transactions, begin, produce, commit)
   writes N records "ck-c-I" to DIRECT_TOPIC and commits, then N records
   "ck-a-I" and aborts.
2. Consume-transform-produce: a group consumer of INPUT (may be
   DIRECT_TOPIC) with isolation.level=read_committed and no auto commit
   hands every record to a second transactional producer, which writes
   "out-VALUE" to OUTPUT and commits the consumer's positions with
   send_offsets_to_transaction in the same transaction, until N input
   records were copied.

Prints "done COPIED" and exits 0; any error raises (exit 1).
"""
import sys

from confluent_kafka import Consumer, Producer, TopicPartition

bootstrap, direct, inp, out, group, n = sys.argv[1:7]
n = int(n)

p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "ck-direct",
              "transaction.timeout.ms": 60000})
p.init_transactions(60)
for outcome in ("c", "a"):
    p.begin_transaction()
    for i in range(n):
        p.produce(direct, value=("ck-%s-%d" % (outcome, i)).encode())
    if outcome == "c":
        p.commit_transaction(60)
    else:
        p.flush(60)
        p.abort_transaction(60)

c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
              "isolation.level": "read_committed", "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
              "heartbeat.interval.ms": 500, "fetch.wait.max.ms": 100})
c.subscribe([inp])
tp = Producer({"bootstrap.servers": bootstrap, "transactional.id": "ck-eos",
               "transaction.timeout.ms": 60000})
tp.init_transactions(60)
copied = 0
while copied < n:
    msgs = c.consume(num_messages=50, timeout=0.5)
    msgs = [m for m in msgs if m.error() is None]
    if not msgs:
        continue
    tp.begin_transaction()
    for m in msgs:
        tp.produce(out, value=b"out-" + m.value(), partition=m.partition())
    tp.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 60)
    tp.commit_transaction(60)
    copied += len(msgs)
c.close()
print("done %d" % copied, flush=True)
