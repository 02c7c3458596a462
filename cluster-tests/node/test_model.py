"""Seeded random sequences of broker registrations, unregistrations, heartbeats, topic deletes
and connection closes, checked after every step against a small model of proto/route.md §3-§7
(each broker group has one master and talks over its own connections)."""

import random
import time

import pytest

from nsrv_check import assert_code, register_ok
from nsrvd_proc import scaled
from rmq import Broker, DataVersion, NamesrvClient, TopicConfig

N_BROKERS = 6
STEPS = 300


def _snapshot(client):
    info = client.cluster_info().body_json()
    return {name: bd["brokerAddrs"] for name, bd in info["brokerAddrTable"].items()}


def _topics(client):
    return set(client.all_topics().body_json()["topicList"])


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_random_broker_lifecycle_matches_model(nsrvd, connect, seed):
    rnd = random.Random(seed)
    client = NamesrvClient(connect(nsrvd))
    brokers = [Broker(name=f"bk{i}", addr=f"127.0.0.1:{20000 + i}") for i in range(N_BROKERS)]
    conns = {}  # broker name -> NamesrvClient it registered on last (None if closed)
    registered = {}  # broker name -> set of topics it owns in the model
    versions = {b.name: 0 for b in brokers}

    def topics_for(b):
        k = rnd.randint(2, 4)
        return ["Shared"] + [f"{b.name}-t{j}" for j in range(k)]

    def expected_topics():
        out = set()
        for ts in registered.values():
            out |= ts
        return out

    def settle(pred, what):
        deadline = time.monotonic() + scaled(2)
        while True:
            if pred():
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"seed {seed}: {what}")
            time.sleep(0.02)

    for step in range(STEPS):
        b = rnd.choice(brokers)
        op = rnd.choice(["register", "register", "register_new_conn", "unregister", "close", "heartbeat",
                         "delete_topic"])
        if op in ("register", "register_new_conn"):
            old = conns.get(b.name)
            if op == "register_new_conn" or old is None:
                c = NamesrvClient(connect(nsrvd))
            else:
                c = old
            names = topics_for(b)
            versions[b.name] += 1
            register_ok(c, b, [TopicConfig(t, 4, 4, 6) for t in names], DataVersion(versions[b.name], 1))
            # Re-registration on a new connection, then the old one closes: broker stays.
            if old is not None and old is not c and rnd.random() < 0.5:
                old.conn.close()
            conns[b.name] = c
            # deleteTopicWithBrokerRegistration is off: topics accumulate per broker.
            registered[b.name] = registered.get(b.name, set()) | set(names)
        elif op == "unregister":
            if b.name not in registered:
                continue
            assert_code(client.unregister_broker(b), 0)
            registered.pop(b.name)
        elif op == "close":
            c = conns.pop(b.name, None)
            if c is None:
                continue
            c.conn.close()
            registered.pop(b.name, None)
        elif op == "heartbeat":
            client.heartbeat(b, oneway=True)
        elif op == "delete_topic":
            pool = sorted(expected_topics())
            if not pool:
                continue
            t = rnd.choice(pool)
            assert_code(client.delete_topic(t), 0)
            # Removes every broker's QueueData; a later registration adds back only its own.
            for ts in registered.values():
                ts.discard(t)

        settle(lambda: set(_snapshot(client)) == set(registered),
               f"step {step} {op} {b.name}: brokers {sorted(_snapshot(client))} != model {sorted(registered)}")
        settle(lambda: _topics(client) == expected_topics(),
               f"step {step} {op} {b.name}: topics {sorted(_topics(client))} != model {sorted(expected_topics())}")
        for name in registered:
            assert _snapshot(client)[name] == {"0": brokers[int(name[2:])].addr}
