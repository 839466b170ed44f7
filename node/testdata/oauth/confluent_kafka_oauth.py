"""An OAUTHBEARER client on python3-confluent-kafka (librdkafka), for
node's TestOAuthBearerClients.

Usage: confluent_kafka_oauth.py BOOTSTRAP TOPIC TOKEN_FILE N

oauth_cb reads "TOKEN EXPIRY_SECONDS PRINCIPAL" from TOKEN_FILE at each
call. Produces N records "py-<i>" to partition 0 of TOPIC (acks=all),
then reads partition 0 from the beginning and prints each value. An
authentication failure prints "AUTH_FAILED <reason>" to standard error
and exits 3; any other error exits 1.
"""
import sys

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

bootstrap, topic, token_file, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])


def oauth_cb(_config):
    with open(token_file) as f:
        token, expiry, _principal = f.read().split()
    return token, float(expiry)


def on_error(err):
    if err.code() == KafkaError._AUTHENTICATION:
        print("AUTH_FAILED", err.str(), file=sys.stderr, flush=True)
        sys.exit(3)


common = {
    "bootstrap.servers": bootstrap,
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanisms": "OAUTHBEARER",
    "oauth_cb": oauth_cb,
    "error_cb": on_error,
}
p = Producer(dict(common, **{"acks": "all", "enable.idempotence": True}))
failed = []
for i in range(n):
    p.produce(topic, value=("py-%d" % i).encode(), partition=0,
              on_delivery=lambda err, _msg: err and failed.append(err))
    p.poll(0)
left = p.flush(30)
if left or failed:
    print("ERROR produce: %d not delivered, %s" % (left, failed[:3]), file=sys.stderr)
    sys.exit(1)

c = Consumer(dict(common, **{"group.id": "py-oauth", "enable.auto.commit": False}))
c.assign([TopicPartition(topic, 0, 0)])
got = 0
while got < n:
    m = c.poll(30)
    if m is None:
        print("ERROR consume: nothing in 30 s after %d records" % got, file=sys.stderr)
        sys.exit(1)
    if m.error():
        print("ERROR consume:", m.error(), file=sys.stderr)
        sys.exit(1)
    print(m.value().decode(), flush=True)
    got += 1
c.close()
