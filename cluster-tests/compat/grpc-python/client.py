"""The Python twin of grpc/GrpcClient.java: a producer, a SimpleConsumer and a PushConsumer of
rocketmq-python-client (the RocketMQ 5 gRPC client for Python), all talking to one Proxy.

  client.py run --endpoint HOST:PORT --topic T --count N --simple-group G1 --push-group G2 [--timeout S]

Both consumers (each its own group, so each must see every message) start before the producer
sends N messages with distinct bodies (only bodies of this run count); then it waits until both
have N distinct bodies or S seconds (default 60) passed since the last send, and prints one JSON line with the same keys as
GrpcClient. Exit status 0 only if every count is N.
"""

import argparse
import json
import os
import sys
import threading
import time

from rocketmq import (ClientConfiguration, ConsumeResult, Credentials, FilterExpression, Message,
                      MessageListener, Producer, PushConsumer, SimpleConsumer)

MAX_ERRORS = 20


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["run"])
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--simple-group", required=True)
    ap.add_argument("--push-group", required=True)
    ap.add_argument("--timeout", type=int, default=60)
    a = ap.parse_args()
    t0 = time.time()
    # The wait is counted from the last send (as in GrpcClient).
    deadline = [float("inf")]
    # Bodies carry this run's id: a consumer group new to a topic may also be handed messages an
    # earlier run left there, and those must not count.
    run = f"{int(t0 * 1000):x}-{os.getpid()}-"
    errors = []
    lock = threading.Lock()

    def error(what, e):
        with lock:
            if len(errors) < MAX_ERRORS:
                errors.append(f"{what}: {e!r}")

    conf = ClientConfiguration(a.endpoint, Credentials(), request_timeout=10)
    sub = {a.topic: FilterExpression("*")}
    push_seen, push_total = set(), [0]

    class Listener(MessageListener):
        def consume(self, message):
            body = message.body.decode("utf-8", "replace")
            if body.startswith(run):
                with lock:
                    push_total[0] += 1
                    push_seen.add(body)
            return ConsumeResult.SUCCESS

    push = PushConsumer(conf, a.push_group, Listener(), sub, consumption_thread_count=4)
    push.startup()
    simple = SimpleConsumer(conf, a.simple_group, sub, await_duration=5)
    simple.startup()
    simple_seen, simple_total = set(), [0]

    def receive():
        while len(simple_seen) < a.count and time.time() < deadline[0]:
            try:
                for m in simple.receive(16, 30) or []:
                    body = m.body.decode("utf-8", "replace")
                    if body.startswith(run):
                        simple_total[0] += 1
                        simple_seen.add(body)
                    simple.ack(m)
            except Exception as e:  # noqa: BLE001 - counted and reported
                error("simple receive/ack", e)
                time.sleep(0.5)

    threading.Thread(target=receive, daemon=True).start()
    started = int((time.time() - t0) * 1000)

    producer = Producer(conf, (a.topic,))
    producer.startup()
    sent = failed = 0
    for i in range(a.count):
        msg = Message()
        msg.topic = a.topic
        msg.tag = "compat"
        msg.keys = f"k{i}"
        msg.body = f"{run}{i}".encode()
        try:
            producer.send(msg)
            sent += 1
        except Exception as e:  # noqa: BLE001 - counted and reported
            failed += 1
            error(f"send {i}", e)
    sent_at = int((time.time() - t0) * 1000)
    deadline[0] = time.time() + a.timeout
    simple_at = push_at = -1
    while time.time() < deadline[0]:
        if simple_at < 0 and len(simple_seen) >= a.count:
            simple_at = int((time.time() - t0) * 1000)
        if push_at < 0 and len(push_seen) >= a.count:
            push_at = int((time.time() - t0) * 1000)
        if simple_at >= 0 and push_at >= 0:
            break
        time.sleep(0.1)
    print(json.dumps({"sent": sent, "sendFailed": failed, "simpleDistinct": len(simple_seen),
                      "simpleTotal": simple_total[0], "pushDistinct": len(push_seen), "pushTotal": push_total[0],
                      "errors": errors, "consumersStartedMs": started, "sentMs": sent_at,
                      "simpleDoneMs": simple_at, "pushDoneMs": push_at}), flush=True)
    ok = sent == a.count and len(simple_seen) == a.count and len(push_seen) == a.count
    # Without shutting the clients down (their long polls would hold the exit): nothing here needs it.
    os._exit(0 if ok else 1)


if __name__ == "__main__":
    sys.exit(main())
