"""What one registration may cost is bounded by configuration: registerMaxTopics (each topic
becomes route-table state, and a compressed body names many topics in few bytes) and
registerMaxDecodedBytes (inflated text plus decoded structures, charged while decoding).
A registration past either is refused with SYSTEM_ERROR naming the limit, and registers
nothing."""

import pytest

from nsrv_check import assert_code, register_ok
from rmq import Broker, DataVersion, ResponseCode, TopicConfig, register_broker_body_compressed

PREFIX = "Failed to decode RegisterBrokerBody: "


def topics(n, prefix="T"):
    return [TopicConfig(f"{prefix}{i:07d}", 1, 1, 6) for i in range(n)]


@pytest.mark.nsrvd_config(registerMaxTopics=1000)
@pytest.mark.parametrize("compressed", [True, False], ids=["compressed", "json"])
def test_topics_past_register_max_topics_are_refused(ns, compressed):
    register_ok(ns, Broker(name="broker-a"), topics(1000, "A"), compressed=compressed)
    b = Broker(name="broker-b", addr="127.0.0.1:10912")
    resp = ns.register_broker(b, topics(1001, "B"), compressed=compressed)
    assert_code(resp, ResponseCode.SYSTEM_ERROR, PREFIX + "1001 topics exceed registerMaxTopics=1000")
    assert ns.get_route("B0000000").code == ResponseCode.TOPIC_NOT_EXIST
    assert ns.get_route("A0000999").code == 0


@pytest.mark.nsrvd_config(registerMaxDecodedBytes=1048576)
def test_registration_past_decoded_budget_is_refused(ns):
    body = register_broker_body_compressed(topics(60000), DataVersion(1, 1))
    assert len(body) < 256 * 1024  # expands past the 1 MiB budget only once inflated
    resp = ns.register_broker(Broker(), body=body, compressed_flag=True)
    assert_code(resp, ResponseCode.SYSTEM_ERROR,
                PREFIX + "inflated body exceeds registerMaxDecodedBytes=1048576 bytes")
    assert ns.get_route("T0000000").code == ResponseCode.TOPIC_NOT_EXIST
    # A registration within the budget still works on the same connection.
    register_ok(ns, Broker(), topics(1000), compressed=True)


@pytest.mark.slow
def test_compressed_registration_memory_is_bounded_by_default(nsrvd, ns):
    """A 300,000-topic compressed registration (~1 MB on the wire) is refused by the default
    registerMaxTopics=200000 before its topics cost memory."""
    body = register_broker_body_compressed(topics(300000), DataVersion(1, 1))
    before_kb = nsrvd.rss_kb()
    resp = ns.register_broker(Broker(), body=body, compressed_flag=True)
    grown_kb = nsrvd.rss_kb() - before_kb
    assert_code(resp, ResponseCode.SYSTEM_ERROR, PREFIX + "300000 topics exceed registerMaxTopics=200000")
    assert ns.all_topics().code == 0
    # The inflated text (~9 MB) is all it cost; accepted, its topics take >100 MB.
    assert grown_kb < 32 * 1024, f"RSS grew {grown_kb} kB for a {len(body)} byte body"
    print(f"{len(body)} byte body: RSS +{grown_kb} kB")
