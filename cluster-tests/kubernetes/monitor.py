#!/usr/bin/env python3
"""Watches the nsrvd pods of a live cluster while they are replaced, and asks every one of
them for the route of a topic, about five times a second.

    monitor.py --api URL --token FILE --namespace NS --selector LABELS --topic T
               --broker NAME --stop FILE --out FILE.json

Until FILE appears (or --max-seconds pass) it lists the pods through the API server and:

* every pod that is Ready and not being deleted must answer GET_ROUTEINFO_BY_TOPIC on
  podIP:9876 with the broker in the route; a pod that does not is recorded as a violation
  ("every broker routable on every pod throughout");
* for every pod, from its first answer on, the moment the broker first appears in its route,
  and the node's REGISTER_BROKER count (/metrics) at that moment: 0 means the broker came from
  the peers (gossip), not from the broker itself, which registers only every 30 s;
* the moment the monitor first saw the pod Ready, so that "complete within 1 s of Ready" is
  measured (the broker already in the route at Ready counts as 0 s).

Writes everything as JSON; run.sh draws the checks from it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import ssl
import sys
import time
import urllib.request
from typing import Any, Dict, Optional, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import rmq  # noqa: E402
from fastjson import loads_lenient  # noqa: E402

REGISTER_BROKER = 103
METRIC = re.compile(r'^nsrvd_requests_by_code_total\{code="%d"[^}]*\} (\d+)' % REGISTER_BROKER, re.M)


def api_pods(args: argparse.Namespace, ctx: ssl.SSLContext, token: str) -> list:
    url = "%s/api/v1/namespaces/%s/pods?labelSelector=%s" % (args.api, args.namespace, args.selector)
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, context=ctx, timeout=2) as r:
        return json.load(r)["items"]


def route_has_broker(ip: str, topic: str, broker: str) -> Tuple[bool, str]:
    """(broker in the route, detail). Any error is a 'no' with the reason."""
    try:
        with rmq.Connection(ip, 9876, timeout=0.8) as c:
            r = c.request(rmq.RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, timeout=0.8)
    except (OSError, rmq.FrameError, ConnectionError) as e:
        return False, "no answer: %s" % e
    if r.code != 0:
        return False, "code %d %s" % (r.code, r.remark or "")
    route = loads_lenient(r.body_text())
    names = sorted(b.get("brokerName", "") for b in route.get("brokerDatas") or [])
    return broker in names, "brokers %s" % names


def register_count(ip: str) -> Optional[int]:
    try:
        with urllib.request.urlopen("http://%s:9877/metrics" % ip, timeout=0.8) as r:
            text = r.read().decode()
    except OSError:
        return None
    m = METRIC.search(text)
    return int(m.group(1)) if m else 0


def is_ready(pod: dict) -> bool:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--selector", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--broker", required=True)
    ap.add_argument("--stop", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("--max-seconds", type=float, default=900)
    args = ap.parse_args()
    token = open(args.token).read().strip()
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the test API server's own self-signed certificate

    pods: Dict[str, Dict[str, Any]] = {}  # by uid
    violations = []
    checks_of_ready = 0
    api_errors = 0
    start = time.time()
    deadline = start + args.max_seconds
    while not os.path.exists(args.stop) and time.time() < deadline:
        t0 = time.time()
        try:
            items = api_pods(args, ctx, token)
        except OSError as e:
            api_errors += 1
            if api_errors > 50:
                print("monitor: API server unreachable: %s" % e, file=sys.stderr)
                break
            time.sleep(args.interval)
            continue
        for p in items:
            uid = p["metadata"]["uid"]
            ip = (p.get("status") or {}).get("podIP")
            rec = pods.setdefault(uid, {
                "name": p["metadata"]["name"], "uid": uid, "first_seen": t0, "ip": None,
                "first_answer": None, "complete": None, "register_count_at_complete": None,
                "ready": None, "deleting": None, "ready_checks": 0, "seen_at_start": t0 - start < 1.0,
            })
            if ip:
                rec["ip"] = ip
            deleting = p["metadata"].get("deletionTimestamp") is not None
            if deleting and rec["deleting"] is None:
                rec["deleting"] = t0
            ready = is_ready(p)
            if ready and rec["ready"] is None and not deleting:
                rec["ready"] = time.time()
            if not ip:
                continue
            if rec["complete"] is None:
                # Read the count first: a REGISTER_BROKER landing between the two reads then
                # shows as a non-zero count, never as gossip.
                count = register_count(ip)
                has, detail = route_has_broker(ip, args.topic, args.broker)
                if rec["first_answer"] is None and not detail.startswith("no answer"):
                    rec["first_answer"] = time.time()
                if has:
                    rec["complete"] = time.time()
                    rec["register_count_at_complete"] = count
                    rec["route_at_complete"] = detail
            if ready and not deleting:
                has, detail = route_has_broker(ip, args.topic, args.broker)
                rec["ready_checks"] += 1
                checks_of_ready += 1
                if not has:
                    violations.append({"t": round(time.time() - start, 3), "pod": rec["name"], "ip": ip,
                                       "detail": detail})
        time.sleep(max(0.0, args.interval - (time.time() - t0)))

    for rec in pods.values():
        if rec["ready"] is not None and rec["complete"] is not None:
            rec["ready_to_complete_s"] = round(max(0.0, rec["complete"] - rec["ready"]), 3)
        if rec["first_answer"] is not None and rec["complete"] is not None:
            rec["answer_to_complete_s"] = round(rec["complete"] - rec["first_answer"], 3)
    json.dump({"start": start, "end": time.time(), "pods": list(pods.values()), "violations": violations,
               "ready_checks": checks_of_ready, "api_errors": api_errors}, open(args.out, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
