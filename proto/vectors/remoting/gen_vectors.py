#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the golden remoting frames in this directory (see README.md).

The frames are written out by hand from proto/remoting.md §2-§4, not
produced by nsrvd's encoder, so the unit tests compare the C codec against an
independent rendering. Run it from anywhere; it writes next to itself.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def frame(ser_type, header, body=b""):
    return (struct.pack(">I", 4 + len(header) + len(body)) +
            struct.pack(">I", (ser_type << 24) | len(header)) + header + body)


def rmq_header(code, lang, version, opaque, flag, remark=b"", ext=()):
    m = b"".join(struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v for k, v in ext)
    return (struct.pack(">hBhii", code, lang, version, opaque, flag) +
            struct.pack(">i", len(remark)) + remark + struct.pack(">i", len(m)) + m)


VECTORS = {
    # proto/remoting.md §4 worked example, copied byte for byte.
    "rmq_get_route_request.bin": bytes.fromhex(
        "0000002d" "01000029" "0069" "00" "01df" "00000001" "00000000" "00000000"
        "00000014" "0005" "746f706963" "00000009" "546f70696354657374"),
    # proto/remoting.md §3 sample header (observed from fastjson 1.2.83).
    "json_get_route_request.bin": frame(0, b'{"code":105,"extFields":{"topic":"TopicTest"},'
                                          b'"flag":0,"language":"JAVA","opaque":7,'
                                          b'"serializeTypeCurrentRPC":"JSON","version":453}'),
    # proto/requests.md §2.8 TOPIC_NOT_EXIST reply to the request above; remark has a "\n".
    "json_topic_not_exist_response.bin": frame(
        0, b'{"code":17,"flag":1,"language":"JAVA","opaque":7,'
           b'"remark":"No topic route info in name server for the topic: TopicTest\\n'
           b'See https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.",'
           b'"serializeTypeCurrentRPC":"JSON","version":479}'),
    # proto/requests.md §2.2 GET_KV_CONFIG not found: extFields present but empty.
    "json_kv_not_found_response.bin": frame(
        0, b'{"code":22,"extFields":{},"flag":1,"language":"JAVA","opaque":3,'
           b'"remark":"No config item, Namespace: ORDER_TOPIC_CONFIG Key: TopicA",'
           b'"serializeTypeCurrentRPC":"JSON","version":479}'),
    # proto/requests.md §2.4 QUERY_DATA_VERSION reply: one ext field and a body.
    "json_query_data_version_response.bin": frame(
        0, b'{"code":0,"extFields":{"changed":"false"},"flag":1,"language":"JAVA",'
           b'"opaque":12,"serializeTypeCurrentRPC":"JSON","version":479}',
        b'{"counter":1,"stateVersion":0,"timestamp":1700000000000}'),
    # A oneway binary request with a remark, several ext fields and a body.
    "rmq_register_broker_oneway.bin": frame(1, rmq_header(
        103, 0, 479, 42, 2, b"hello \"remark\"\nline2",
        [(b"brokerName", b"broker-a"), (b"brokerAddr", b"10.0.0.1:10911"),
         (b"clusterName", b"DefaultCluster"), (b"haServerAddr", b"10.0.0.1:10912"),
         (b"brokerId", b"0"), (b"compressed", b"false"), (b"bodyCrc32", b"0"),
         (b"__ZONE_NAME", "zone-\u00e9\u4e2d".encode())]),
        b'{"topicConfigSerializeWrapper":{}}'),
    # A binary SUCCESS reply with an absent remark and no ext (E = 0), no body.
    "rmq_success_response.bin": frame(1, rmq_header(0, 0, 479, 1, 1)),
}

for name, data in VECTORS.items():
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
