"""Direct NameServer queries (cluster-tests/lib/rmq.py) and canonical forms for comparisons."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Tuple

from common import rmq
from servers import NameServer, normalize


def request(ns: NameServer, code: int, ext: Optional[Dict[str, Any]] = None, body: Optional[bytes] = None,
            version: int = rmq.VERSION_V5_3_3, timeout: float = 10.0) -> rmq.Command:
    with ns.conn(timeout=timeout) as c:
        return c.request(code, ext, body, version=version)


def route(ns: NameServer, topic: str, version: int = rmq.VERSION_V5_3_3) -> Tuple[int, Optional[dict], str]:
    """(code, parsed TopicRouteData or None, raw body text)."""
    r = request(ns, rmq.RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, version=version)
    raw = r.body_text()
    if r.code != 0 or not raw:
        return r.code, None, raw or (r.remark or "")
    return r.code, rmq.loads_lenient(raw), raw


def cluster_info(ns: NameServer) -> dict:
    r = request(ns, rmq.RequestCode.GET_BROKER_CLUSTER_INFO)
    return rmq.loads_lenient(r.body_text()) if r.body else {}


def broker_addrs(ns: NameServer, broker_name: str) -> Dict[str, str]:
    info = cluster_info(ns)
    bd = (info.get("brokerAddrTable") or {}).get(broker_name) or {}
    return dict(bd.get("brokerAddrs") or {})


def topics_by_cluster(ns: NameServer, cluster: str) -> List[str]:
    r = request(ns, rmq.RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": cluster}, timeout=30)
    return list(rmq.loads_lenient(r.body_text()).get("topicList", [])) if r.body else []


def all_topics(ns: NameServer) -> List[str]:
    r = request(ns, rmq.RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, timeout=30)
    return list(rmq.loads_lenient(r.body_text()).get("topicList", [])) if r.body else []


def route_brokers(ns: NameServer, topic: str) -> Dict[str, Dict[str, str]]:
    """brokerName -> brokerAddrs of the topic's route ({} if no route)."""
    code, obj, _ = route(ns, topic)
    if code != 0 or not obj:
        return {}
    return {b["brokerName"]: dict(b.get("brokerAddrs") or {}) for b in obj.get("brokerDatas", [])}


def canon(obj: Any) -> Any:
    """Order-insensitive form: dict keys sorted, lists sorted by their JSON text."""
    if isinstance(obj, dict):
        return {str(k): canon(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, list):
        items = [canon(v) for v in obj]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    return obj


FIELDS_5X = ("enableActingMaster", "zoneName", "topicQueueMappingByBroker")


def strip_5x(obj: Any) -> Any:
    """Drops the bean fields that only 5.x has (BrokerData.enableActingMaster/zoneName,
    TopicRouteData.topicQueueMappingByBroker), to compare nsrvd (which always answers in the
    5.x shape, like a 5.x NameServer) with a 4.9.7 NameServer."""
    if isinstance(obj, dict):
        return {k: strip_5x(v) for k, v in obj.items() if k not in FIELDS_5X}
    if isinstance(obj, list):
        return [strip_5x(v) for v in obj]
    return obj


def canon_text(raw: str, *, for_497: bool = False) -> str:
    """Canonical JSON text of a fastjson body, with broker addresses replaced by labels."""
    obj = rmq.loads_lenient(normalize(raw))
    if for_497:
        obj = strip_5x(obj)
    return json.dumps(canon(obj), sort_keys=True)


def parse_cluster_list(text: str) -> List[Tuple[str, ...]]:
    """mqadmin clusterList rows -> (cluster, brokerName, BID, addr-label, version)."""
    rows = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) >= 5 and parts[2].isdigit():
            rows.append((parts[0], parts[1], parts[2], normalize(parts[3]), parts[4]))
    return sorted(rows)


def parse_topic_list(text: str) -> List[str]:
    return sorted({ln.strip() for ln in text.splitlines() if ln.strip()})


def parse_route_output(text: str) -> Optional[Any]:
    """mqadmin topicRoute prints the route as (pretty) fastjson; canonical form or None."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        return canon(rmq.loads_lenient(normalize(text[start:].strip())))
    except rmq.LenientJSONError:
        return None


def parse_config_output(text: str) -> Dict[str, str]:
    """mqadmin getNamesrvConfig: 'key<spaces>=  value' lines."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+)\s+=\s\s(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def error_code(text: str) -> Optional[int]:
    m = re.search(r"CODE:\s*(-?\d+)", text or "")
    return int(m.group(1)) if m else None
