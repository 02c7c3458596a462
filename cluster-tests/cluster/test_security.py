"""Forged, replayed, delayed and tampered gossip changes nothing (proto/gossip.md §8 of
proto/gossip.md).

Node 1's gossip for node 3 goes through a relay (node 1's gossipPeers names the relay's port
for node 3), which records every datagram and pull request and can hold datagrams back. Nodes
only compare the source IP of a packet with the peer's configured IP, and everything here is
127.0.0.1, so the relayed packets are accepted like direct ones, and so are packets the test
sends itself. The test has node 1's secret key file, so it can also make packets that are
correctly signed but wrong in exactly one other field: each is refused by the check that
field is for, not by the signature.

Brokers: 2 registered with every node (background) and "solo" registered with node 1 only,
which node 3 knows through node 1's digests alone. Timeout 6 s, period 2 s, full digest 1 s.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Dict, List, Optional, Tuple

import pytest

import gossipwire as gw
from clusterlib import Relay, poll_until, send_udp, tcp_exchange

TIMEOUT_MS = 6000
PERIOD_MS = 2000
SOLO_PERIOD_MS = 1000
SHORT = {"gossipIntervalMs": 1000, "scanNotActiveBrokerInterval": 1000}
SOLO_ADDR = "127.0.0.1:30911"


def rejected(st: dict, peer_id: Optional[int] = None) -> Counter:
    g = st["gossip"]
    if peer_id is None:
        return Counter(g["rejectedTotal"])
    for p in g["peers"]:
        if p["id"] == peer_id:
            return Counter(p["rejected"])
    raise KeyError(peer_id)


def accepted(st: dict, peer_id: int) -> int:
    return next(p["accepted"] for p in st["gossip"]["peers"] if p["id"] == peer_id)


def diff(after: Counter, before: Counter) -> Dict[str, int]:
    return {k: after[k] - before[k] for k in set(after) | set(before) if after[k] != before[k]}


class Setup:
    def __init__(self, cluster_factory, sim_factory):
        c = cluster_factory(config=SHORT, start=False)
        self.relay = Relay(c.node(3).gossip_port)
        c.redirect(1, 3, self.relay.port)
        c.start()
        self.t_up = time.monotonic()  # every node receives from here on
        self.c = c
        self.n1, self.n3 = c.node(1), c.node(3)
        self.bg = sim_factory(c.ns_addrs(), brokers=2, topics=3, period_ms=PERIOD_MS, timeout_ms=TIMEOUT_MS)
        self.solo = sim_factory(c.ns_addrs([1]), brokers=1, topics=3, prefix="solo-", addr_base=30911,
                                period_ms=SOLO_PERIOD_MS, timeout_ms=TIMEOUT_MS)
        self.bg.wait_ready()
        self.solo.wait_ready()
        poll_until(lambda: self.n3.brokers().get(SOLO_ADDR, {}).get("source") == "peer:1", 5)
        self.key1 = gw.SigningKey.from_file(self.n1.key_file)
        self.solo_bkey = gw.bkey("DefaultCluster", "solo-0000", 0, SOLO_ADDR)
        # Node 1's boot-time PULL ALL to node 3 went through the relay and was answered.
        poll_until(lambda: any(s["reply_bytes"] > 0 for s in self.relay.tcp_sessions), 5)
        # And a full digest that lists solo has gone through, and a few more datagrams.
        poll_until(lambda: any(e.type == gw.DIGEST_FULL and self.solo_bkey in [en[0] for en in gw.entries(e)]
                               for e, _, _, _ in self.captured()), 5)
        poll_until(lambda: len(self.surely_delivered()) >= 5, 10)

    def surely_delivered(self) -> List[bytes]:
        """Datagrams forwarded to node 3 while it was up (earlier ones were lost)."""
        return [c.data for c in self.relay.snapshot() if c.delivered and c.t > self.t_up + 0.05]

    def close(self):
        self.relay.close()

    def captured(self) -> List[Tuple[gw.Envelope, bytes, float, bool]]:
        out = []
        for cap in self.relay.snapshot():
            env, ebytes, _ = gw.split(cap.data)
            # Our codec and nsrvd's agree on every byte (shortest forms, proto/gossip.md §2).
            assert env.encode() == ebytes, "re-encoding a captured envelope changed its bytes"
            out.append((env, cap.data, cap.t, cap.delivered))
        return out

    def used_seqs(self) -> set:
        seqs = {e.seq for e, _, _, _ in self.captured()}
        for s in self.relay.tcp_sessions:
            if len(s["request"]) > 4:
                seqs.add(gw.decode(s["request"][4:]).seq)
        return seqs

    def gap_seq(self) -> int:
        """A seq node 1 used for node 2 only: unseen by node 3 but inside its window."""
        used = self.used_seqs()
        top = max(used)
        for s in range(top - 1, max(0, top - 200), -1):
            if s not in used:
                return s
        raise AssertionError("no gap in node 1's sequence numbers")


@pytest.fixture
def setup(cluster_factory, sim_factory):
    s = Setup(cluster_factory, sim_factory)
    yield s
    s.close()


@pytest.mark.budget(120)
def test_forged_replayed_tampered_packets_change_nothing(setup, results):
    s = setup
    c, n1, n3 = s.c, s.n1, s.n3
    caps = s.captured()
    full = [e for e, _, _, d in caps if e.type == gw.DIGEST_FULL and d]
    assert full, "no full digest from node 1 captured"
    latest = full[-1]
    assert latest.dst == 3 and latest.src == 1
    assert s.solo_bkey in [en[0] for en in gw.entries(latest)], "node 1's digest lacks the solo broker"
    inc1 = latest.src_inc
    fresh = max(s.used_seqs()) + 100000  # never reached by node 1 during the test

    st0 = n3.status()
    view0 = n3.broker_set(st0)
    assert not rejected(st0), f"rejections before any attack: {rejected(st0)}"

    # ------------------------------------------------------------ phase A: crafted packets
    def signed(**kw) -> bytes:
        nonlocal fresh
        fresh += 1
        base = dict(seq=fresh, wall_ms=int(time.time() * 1000))
        base.update(kw)
        return gw.seal(latest.with_(**base), s.key1)

    fake_bkey = gw.bkey("DefaultCluster", "ghost", 0, "127.0.0.1:1")
    attacks: List[Tuple[str, bytes, str, str, bool]] = []  # name, data, src ip, reason, per peer 1
    delivered = s.surely_delivered()[-5:]
    for d in delivered:
        attacks.append(("replay of a delivered datagram", d, "127.0.0.1", "replay", True))
    good = signed()
    attacks.append(("bit flipped in the signature", good[:-1] + bytes([good[-1] ^ 1]), "127.0.0.1", "bad_sig", True))
    env_b, env_bytes, sig_b = gw.split(signed())
    tampered_body = list(env_b.body)
    tampered_body[5] = [en[:4] + [0] + en[5:] for en in tampered_body[5]]  # every age set to 0
    attacks.append(("ages rewritten, signature kept", env_b.with_(body=tampered_body).encode() + sig_b,
                    "127.0.0.1", "bad_sig", True))
    ghost = latest.with_(type=gw.DIGEST_DELTA, seq=fresh + 1000, wall_ms=int(time.time() * 1000),
                         body=[[[fake_bkey, 1, 1, 0, 0, 0]]])
    attacks.append(("forged with another key", gw.seal(ghost, gw.SigningKey.random()), "127.0.0.1", "bad_sig", True))
    attacks.append(("wrong cluster", signed(cluster="another-cluster"), "127.0.0.1", "cluster", False))
    attacks.append(("wrong destination", signed(dst=2), "127.0.0.1", "dst", True))
    attacks.append(("unknown key id", signed(key_id=9), "127.0.0.1", "key_id", True))
    attacks.append(("unknown sender", signed(src=9), "127.0.0.1", "unknown_src", False))
    attacks.append(("wrong source address", signed(), "127.0.0.2", "src_addr", True))
    attacks.append(("older incarnation", signed(src_inc=inc1 - 1), "127.0.0.1", "old_incarnation", True))
    attacks.append(("incarnation from the future",
                    signed(src_inc=int(time.time() * 1000) + 2 * 86400 * 1000), "127.0.0.1", "future_incarnation", True))
    # A wall clock 60 s off is no reason to refuse (proto/gossip.md §8): not an attack any more.
    attacks.append(("PULL_REQ over UDP", signed(type=gw.PULL_REQ, body=[gw.Bin(os.urandom(16)), []]),
                    "127.0.0.1", "type", True))
    attacks.append(("version 2", signed(ver=2), "127.0.0.1", "version", False))
    # 0xc1 is msgpack's never-used byte: random bytes alone start a fixarray and a small version
    # number often enough (~3 %) to be refused as "version" instead.
    attacks.append(("garbage", b"\xc1" + os.urandom(199), "127.0.0.1", "decode", False))
    attacks.append(("runt", b"\x9b\x01", "127.0.0.1", "size", False))
    for _name, data, ip, _reason, _peer in attacks:
        send_udp(n3.gossip_port, data, src_ip=ip)
    want_total = Counter(r for _, _, _, r, _ in attacks)
    want_peer = Counter(r for _, _, _, r, p in attacks if p)
    time.sleep(1.5)
    st1 = n3.status()
    got_total = diff(rejected(st1), rejected(st0))
    got_peer = diff(rejected(st1, 1), rejected(st0, 1))
    view1 = n3.broker_set(st1)
    acc_a = accepted(st1, 1) - accepted(st0, 1)

    # ------------------------------------------------------------ phase B: held back, then late
    # Node 1's datagrams to node 3 are held from t_hold; solo (heartbeating node 1 every second)
    # freezes 1 s later, and the held datagrams, which carry its last heartbeats with their
    # ages, reach node 3 late, 3.5 s after t_hold: accepted (fresh seqs, within 30 s), but
    # their ages map to when node 1 heard solo, so node 3 must still drop solo within the
    # timeout of its last heartbeat at node 1. Mapping ages at the arrival time instead would
    # keep it up to 3.5 s longer.
    s.relay.hold()
    t_hold = time.monotonic()
    time.sleep(1.0)
    s.solo.freeze("solo-0000")
    t_ref = time.monotonic()
    solo_last = t_ref - n1.brokers()[SOLO_ADDR]["lastDirectAgeMs"] / 1000.0
    time.sleep(max(0.0, t_hold + 3.5 - time.monotonic()))
    # Tamper with the first held datagram (one bit of the last signed byte) and deliver that
    # copy first: refused, and its seq must not be burnt, so the untouched original is
    # accepted on release.
    held_now = list(s.relay.held)
    assert held_now, "nothing was held"
    first = held_now[0].data
    k = len(first) - gw.SIG_LEN - 1
    st_b0 = n3.status()
    had_solo_at_release = SOLO_ADDR in n3.brokers(st_b0)
    send_udp(n3.gossip_port, first[:k] + bytes([first[k] ^ 0x01]) + first[k + 1 :])
    time.sleep(0.1)
    released = s.relay.release()
    t_release = time.monotonic()
    n_held = len(released)
    held_envs = [gw.decode(r.data) for r in released]
    carried_solo = sum(1 for e in held_envs if s.solo_bkey in [en[0] for en in gw.entries(e)])
    drop: Dict[int, float] = {}

    def all_dropped():
        for nd in c.nodes:
            if nd.id not in drop and SOLO_ADDR not in nd.brokers():
                drop[nd.id] = time.monotonic()
        return len(drop) == 3

    poll_until(all_dropped, TIMEOUT_MS / 1000.0 + 5, 0.1)
    st_b1 = n3.status()
    acc_b = accepted(st_b1, 1) - accepted(st_b0, 1)
    rej_b = diff(rejected(st_b1, 1), rejected(st_b0, 1))
    # Everything expired. The released datagrams again: replays now, and no resurrection.
    for r in released:
        send_udp(n3.gossip_port, r.data)
    resurrected = []
    t_end = time.monotonic() + 2.0
    while time.monotonic() < t_end:
        for nd in c.nodes:
            if SOLO_ADDR in nd.brokers():
                resurrected.append(nd.id)
        time.sleep(0.1)
    st_b2 = n3.status()
    rej_b2 = diff(rejected(st_b2, 1), rejected(st_b1, 1))

    # ------------------------------------------------------------ phase C: TCP pull requests
    st_c0 = n3.status()
    captured_req = next(x["request"] for x in s.relay.tcp_sessions if x["reply_bytes"] > 0)
    replay_reply, replay_closed = tcp_exchange(n3.gossip_port, captured_req)
    forged_pull = gw.seal(latest.with_(type=gw.PULL_REQ, seq=fresh + 2000, wall_ms=int(time.time() * 1000),
                                       body=[gw.Bin(os.urandom(16)), []]), gw.SigningKey.random())
    forged_reply, forged_closed = tcp_exchange(n3.gossip_port, gw.pull_frame(forged_pull))
    time.sleep(0.2)
    st_c1 = n3.status()
    rej_c = diff(rejected(st_c1, 1), rejected(st_c0, 1))

    # ------------------------------------------------------------ phase D: replays after 30 s
    # (refused by the replay window, not by a wall-clock freshness check)
    # The oldest datagrams node 3 surely received: those sent before it listened (a start-up
    # SYNC_REQ and ANNOUNCE) were lost, and would be accepted now, not replays.
    first3 = [cap for cap in s.relay.snapshot() if cap.delivered and cap.t > s.t_up + 0.05][:3]
    wait = first3[-1].t + 31 - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    oldest = [cap.data for cap in first3]
    st_d0 = n3.status()
    for d in oldest:
        send_udp(n3.gossip_port, d)
    time.sleep(0.5)
    st_d1 = n3.status()
    rej_d = diff(rejected(st_d1, 1), rejected(st_d0, 1))
    # Each of them reached node 3 once: every copy now is a replay (no wall-clock check).
    view_end = {a for a in n3.brokers(st_d1)}

    results.record(
        "forged_replayed_tampered",
        {
            "attacks": len(attacks),
            "rejected_by_reason_total": got_total,
            "rejected_by_reason_peer1": got_peer,
            "accepted_from_node1_meanwhile": acc_a,
            "held_datagrams": n_held,
            "held_carrying_solo": carried_solo,
            "held_for_s": round(t_release - t_hold, 2),
            "node3_had_solo_at_release": had_solo_at_release,
            "solo_drop_after_last_hb_at_node1_s": {f"node{i}": round(drop[i] - solo_last, 3) for i in sorted(drop)},
            "late_datagrams_accepted": acc_b,
            "late_phase_rejections": rej_b,
            "second_release_rejections": rej_b2,
            "resurrected_on": sorted(set(resurrected)),
            "pull_replay_reply_bytes": len(replay_reply),
            "pull_forged_reply_bytes": len(forged_reply),
            "pull_rejections": rej_c,
            "old_replay_rejections": rej_d,
        },
    )

    problems = []
    if view1 != view0:
        problems.append(f"node 3's view changed under attack: +{view1 - view0} -{view0 - view1}")
    if got_total != dict(want_total):
        problems.append(f"rejections by reason {got_total}, want {dict(want_total)}")
    if got_peer != dict(want_peer):
        problems.append(f"node 3's rejections of peer 1 {got_peer}, want {dict(want_peer)}")
    if acc_a <= 0:
        problems.append("node 1's real datagrams were no longer accepted after the attacks")
    if carried_solo == 0:
        problems.append("no held datagram mentioned the solo broker: the late-delivery check proves nothing")
    if acc_b < n_held:
        problems.append(f"only {acc_b} of {n_held} late datagrams accepted (tampered copy burnt a seq?)")
    if rej_b != {"bad_sig": 1}:
        problems.append(f"late phase rejections {rej_b}, want one bad_sig (the tampered copy)")
    bound = TIMEOUT_MS / 1000.0 + SHORT["scanNotActiveBrokerInterval"] / 1000.0 + 0.5 + 0.1
    for i, t in drop.items():
        if t - solo_last > bound:
            problems.append(f"node {i} kept solo {t - solo_last:.2f}s after its last heartbeat at node 1 "
                            f"(late datagrams stretched its liveness)")
    if resurrected:
        problems.append(f"replayed datagrams resurrected the expired broker on nodes {sorted(set(resurrected))}")
    if rej_b2.get("replay", 0) != n_held:
        problems.append(f"second release: {rej_b2}, want {n_held} replay")
    if replay_reply or not replay_closed:
        problems.append(f"replayed PULL_REQ: {len(replay_reply)} reply bytes, closed={replay_closed}")
    if forged_reply or not forged_closed:
        problems.append(f"forged PULL_REQ: {len(forged_reply)} reply bytes, closed={forged_closed}")
    if sum(rej_c.values()) != 2 or rej_c.get("bad_sig") != 1:
        problems.append(f"pull rejections {rej_c}, want bad_sig 1 and one replay")
    if rej_d != {"replay": len(oldest)}:
        problems.append(f"replays older than 30 s: {rej_d}, want replay {len(oldest)}")
    if SOLO_ADDR in view_end:
        problems.append("solo broker present at the end")
    assert not problems, "\n".join(problems)


@pytest.mark.budget(60)
def test_pull_reply_content(setup, results):
    """proto/gossip.md §7.2-7.3: a correctly signed PULL_REQ for everything (made with node 1's
    key and a seq node 3 has not seen) is answered with every live broker node 3 holds,
    including solo, which it knows only through node 1, and an end frame that verifies with
    node 3's public key. Solo's age in the reply derives from a real heartbeat: it is not
    fresher than node 1's own age for solo, read just before the request."""
    s = setup
    n1, n3 = s.n1, s.n3
    caps = s.captured()
    latest = [e for e, _, _, d in caps if d][-1]
    nonce = os.urandom(16)
    req = gw.seal(latest.with_(type=gw.PULL_REQ, seq=s.gap_seq(), wall_ms=int(time.time() * 1000),
                               body=[gw.Bin(nonce), []]), s.key1)
    witness_age = n1.brokers()[SOLO_ADDR]["lastDirectAgeMs"]
    st0 = n3.status()
    reply, closed = tcp_exchange(n3.gossip_port, gw.pull_frame(req))
    st1 = n3.status()
    assert reply, f"no reply to a valid PULL_REQ; rejected {diff(rejected(st1, 1), rejected(st0, 1))}"
    pr = gw.parse_pull_reply(reply, nonce, s.c.tokens[3].split(":", 2)[2])
    live = sorted(n3.brokers(st1))
    ages = {it[1][0]: it[3] for it in pr.items}
    results.record(
        "pull_reply_content",
        {"reply_bytes": len(reply), "items": pr.addrs(), "signature_ok": pr.signature_ok,
         "node3_live": live, "solo_age_in_reply_ms": ages.get(SOLO_ADDR),
         "solo_age_at_node1_before_ms": witness_age, "closed_after_reply": closed},
    )
    assert pr.signature_ok and pr.count == len(pr.items), "end frame does not verify with node 3's key"
    assert n3.brokers(st0)[SOLO_ADDR]["source"] == "peer:1", "precondition: node 3 knows solo through gossip"
    assert sorted(pr.addrs()) == live, f"pull reply lists {sorted(pr.addrs())}, node 3 holds {live}"
    assert ages[SOLO_ADDR] >= witness_age - 50, (
        f"node 3 reports solo {ages[SOLO_ADDR]} ms old, fresher than node 1's own {witness_age} ms"
    )
