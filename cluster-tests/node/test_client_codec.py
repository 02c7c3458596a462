"""Pure unit tests of cluster-tests/lib/rmq.py against the documented golden bytes (no server).

They prove the client encodes and decodes exactly what proto/remoting.md §3, §4, proto/requests.md §2.5.1, §2.5.2 and §3
show, so a failure in the server suites is not a client bug."""

import json
import re
import struct
import sys
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))

import rmq  # noqa: E402
from rmq import (  # noqa: E402
    Command,
    DataVersion,
    FrameDecoder,
    FrameError,
    SerializeType,
    TopicConfig,
    crc32_masked,
    decode_frame,
    encode_frame,
    fj_dumps,
    loads_lenient,
    make_request,
    parse_lenient,
)

# proto/remoting.md §4 worked example: GET_ROUTEINFO_BY_TOPIC, topic TopicTest, version 479, opaque 1, binary.
GOLDEN_BINARY_FRAME = bytes.fromhex(
    "0000002d" "01000029" "0069" "00" "01df" "00000001" "00000000" "00000000"
    "00000014" "0005" "746f706963" "00000009" "546f70696354657374"
)

# proto/remoting.md §3 observed JSON header.
GOLDEN_JSON_HEADER = (
    b'{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA",'
    b'"opaque":7,"serializeTypeCurrentRPC":"JSON","version":453}'
)

# proto/requests.md §2.5.2 observed inflated payload (one topic plus one mapping).
GOLDEN_COMPRESSED_PAYLOAD = (
    b"\x00\x00\x00\x2c" b'{"counter":0,"stateVersion":0,"timestamp":1}'
    b"\x00\x00\x00\x01"
    b"\x00\x00\x00\x1dTopicTest 4 4 6 SINGLE_TAG {}"
    b"\x00\x00\x00\x02[]"
    b"\x00\x00\x00\x01"
    b"\x00\x00\x00\x77"
    b'{"bname":"broker-a","currIdMap":{0:0},"dirty":false,"epoch":3,"scope":"__global__",'
    b'"topic":"TopicTest","totalQueues":8}'
)

# proto/requests.md §2.5.1 observed RegisterBrokerBody (the document adds whitespace for readability).
GOLDEN_REGISTER_BODY_JSON = re.sub(
    r"\s+",
    "",
    """{"filterServerList":[],
 "topicConfigSerializeWrapper":{
   "dataVersion":{"counter":5,"stateVersion":0,"timestamp":1700000000000},
   "mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000000},
   "topicConfigTable":{
     "TopicTest":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,
                  "topicFilterType":"SINGLE_TAG","topicName":"TopicTest",
                  "topicSysFlag":0,"writeQueueNums":4}},
   "topicQueueMappingDetailMap":{},
   "topicQueueMappingInfoMap":{
     "TopicTest":{"bname":"broker-a","currIdMap":{0:0},"dirty":false,"epoch":3,
                  "scope":"__global__","topic":"TopicTest","totalQueues":8}}}}""",
).encode()

# proto/route.md §9 TopicRouteData, default and standard mode.
ROUTE_DEFAULT = (
    '{"brokerDatas":[{"brokerAddrs":{0:"192.168.0.1:10911",1:"192.168.0.2:10911"},"brokerName":"broker-a",'
    '"cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":'
    '"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
)
ROUTE_STANDARD = ROUTE_DEFAULT.replace('{0:"', '{"0":"').replace(',1:"', ',"1":"')


# ---------------------------------------------------------------- frames and headers


def test_binary_golden_frame_encodes_exactly():
    cmd = make_request(105, {"topic": "TopicTest"}, opaque=1, version=479, serialize_type=SerializeType.ROCKETMQ)
    assert encode_frame(cmd) == GOLDEN_BINARY_FRAME
    assert len(GOLDEN_BINARY_FRAME) == 49


def test_binary_golden_frame_decodes():
    cmd, used = decode_frame(GOLDEN_BINARY_FRAME)
    assert used == 49
    assert (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag) == (105, 0, 479, 1, 0)
    assert cmd.remark is None
    assert cmd.ext == {"topic": "TopicTest"}
    assert cmd.body is None
    assert cmd.serialize_type == SerializeType.ROCKETMQ
    assert cmd.language_name == "JAVA"


def test_json_golden_header_encodes_exactly():
    cmd = make_request(105, {"topic": "TopicTest"}, opaque=7, version=453)
    frame = encode_frame(cmd)
    n, word = struct.unpack(">ii", frame[:8])
    assert frame[8:] == GOLDEN_JSON_HEADER
    assert word == len(GOLDEN_JSON_HEADER)  # type 0 in the top byte
    assert n == 4 + len(GOLDEN_JSON_HEADER)


def test_json_header_omits_null_ext_and_remark():
    frame = encode_frame(make_request(106, None, opaque=3))
    hdr = json.loads(frame[8:])
    assert "extFields" not in hdr and "remark" not in hdr
    assert list(hdr) == sorted(hdr)  # fastjson writes properties alphabetically


def test_json_frame_with_body_roundtrip():
    body = b"\x00\x01binary\xffbody"
    cmd = make_request(103, {"a": "1", "b": "true"}, body, opaque=42, remark="hi")
    frame = encode_frame(cmd)
    got, used = decode_frame(frame)
    assert used == len(frame)
    assert (got.code, got.opaque, got.remark, got.ext, got.body) == (103, 42, "hi", {"a": "1", "b": "true"}, body)
    assert got.header_json["language"] == "JAVA"


def test_binary_roundtrip_with_remark_ext_and_body():
    cmd = make_request(
        1, {"k": "v", "中": "値"}, b"xyz", opaque=-5, remark="ré", serialize_type=SerializeType.ROCKETMQ
    )
    cmd.flag = 1
    got, _ = decode_frame(encode_frame(cmd))
    assert (got.code, got.opaque, got.flag, got.remark, got.ext, got.body) == (
        1, -5, 1, "ré", {"k": "v", "中": "値"}, b"xyz",
    )


def test_binary_empty_strings_decode_as_null():
    """proto/remoting.md §4: a length-0 string is null; the encoder writes an empty remark as length 0."""
    hdr = struct.pack(">hBhiii", 0, 0, 479, 9, 1, 0)
    entries = struct.pack(">h", 1) + b"k" + struct.pack(">i", 0) + struct.pack(">h", 1) + b"x" + struct.pack(">i", 1) + b"y"
    hdr += struct.pack(">i", len(entries)) + entries
    frame = struct.pack(">ii", 4 + len(hdr), (1 << 24) | len(hdr)) + hdr
    got, _ = decode_frame(frame)
    assert got.remark is None
    assert got.ext == {"x": "y"}
    empty_remark = make_request(1, None, remark="", serialize_type=SerializeType.ROCKETMQ)
    assert encode_frame(empty_remark)[8 + 13 : 8 + 17] == b"\x00\x00\x00\x00"


def test_ext_values_are_stringified_like_java():
    cmd = make_request(103, {"brokerId": 0, "compressed": False, "x": None, "t": True})
    assert cmd.ext == {"brokerId": "0", "compressed": "false", "t": "true"}


def test_frame_decoder_handles_byte_by_byte_and_pipelined_input():
    frames = [encode_frame(make_request(105, {"topic": f"T{i}"}, opaque=i)) for i in range(5)]
    frames.append(GOLDEN_BINARY_FRAME)
    stream = b"".join(frames)
    dec = FrameDecoder()
    out = []
    for i in range(len(stream)):
        out.extend(dec.feed(stream[i : i + 1]))
    assert [c.opaque for c in out] == [0, 1, 2, 3, 4, 1]
    assert dec.pending == 0
    dec2 = FrameDecoder()
    assert len(dec2.feed(stream)) == 6


@pytest.mark.parametrize(
    "raw",
    [
        struct.pack(">i", 16777213) + b"\x00" * 8,  # N + 4 > 16 MiB
        struct.pack(">i", -1) + b"\x00" * 8,  # negative
        struct.pack(">i", 3) + b"\x00" * 3,  # shorter than the header-length word
        struct.pack(">ii", 10, 100) + b"\x00" * 6,  # header past the frame
        struct.pack(">ii", 8, 4) + b"{{{{",  # invalid JSON
        struct.pack(">ii", 8, (2 << 24) | 4) + b"{}  ",  # serialize type 2
        struct.pack(">ii", 8, (1 << 24) | 4) + b"\x00" * 4,  # truncated binary header
    ],
    ids=["too-long", "negative", "short", "hdr-past-frame", "bad-json", "type-2", "short-binary"],
)
def test_decoder_rejects_what_a_server_must_reject(raw):
    with pytest.raises(FrameError):
        decode_frame(raw)


def test_largest_legal_total_length_is_accepted_as_incomplete():
    cmd, used = decode_frame(struct.pack(">i", 16777212) + b"\x00" * 4)
    assert cmd is None and used == 0


def test_binary_decoder_rejects_bad_ext_lengths():
    base = struct.pack(">hBhiii", 0, 0, 479, 9, 1, 0)
    bad_ext_len = base + struct.pack(">i", 50)  # E > remaining
    bad_key_len = base + struct.pack(">i", 4) + struct.pack(">h", 10) + b"ab"
    for hdr in (bad_ext_len, bad_key_len):
        frame = struct.pack(">ii", 4 + len(hdr), (1 << 24) | len(hdr)) + hdr
        with pytest.raises(FrameError):
            decode_frame(frame)


# ---------------------------------------------------------------- bodies


def test_crc32_masked():
    assert crc32_masked(b"123456789") == 0xCBF43926 & 0x7FFFFFFF == 0x4BF43926
    assert crc32_masked(b"") == 0
    assert crc32_masked(None) == 0
    # Values with the top bit set are masked, not negative.
    data = next(bytes([i]) * 7 for i in range(256) if zlib.crc32(bytes([i]) * 7) & 0x80000000)
    assert crc32_masked(data) == zlib.crc32(data) - 0x80000000


def test_register_body_json_matches_spec_example():
    body = rmq.register_broker_body_json(
        [TopicConfig("TopicTest", 4, 4, 6)],
        DataVersion(counter=5, timestamp=1700000000000, state_version=0),
        mapping_infos=[rmq.topic_queue_mapping_info("TopicTest", "broker-a", epoch=3, total_queues=8)],
    )
    assert body == GOLDEN_REGISTER_BODY_JSON


def test_register_body_json_v4_has_no_5x_fields():
    body = rmq.register_broker_body_json(
        [TopicConfig("T", 4, 4, 6, attributes=None)], DataVersion(1, 2, state_version=None), v4=True
    ).decode()
    assert body == (
        '{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":2},'
        '"topicConfigTable":{"T":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG",'
        '"topicName":"T","topicSysFlag":0,"writeQueueNums":4}}}}'
    )


def test_compressed_payload_matches_spec_example():
    payload = rmq.register_broker_body_compressed_payload(
        [TopicConfig("TopicTest", 4, 4, 6)],
        DataVersion(counter=0, timestamp=1, state_version=0),
        mapping_infos=[rmq.topic_queue_mapping_info("TopicTest", "broker-a", epoch=3, total_queues=8)],
        version=479,
    )
    assert payload == GOLDEN_COMPRESSED_PAYLOAD


def test_compressed_body_is_zlib_best_compression_and_inflates_back():
    args = ([TopicConfig("TopicTest", 4, 4, 6)], DataVersion(0, 1, 0))
    kw = dict(mapping_infos=[rmq.topic_queue_mapping_info("TopicTest", "broker-a", epoch=3)])
    body = rmq.register_broker_body_compressed(*args, version=479, **kw)
    assert body[:2] == b"\x78\xda"
    assert zlib.decompress(body) == rmq.register_broker_body_compressed_payload(*args, version=479, **kw)


def test_compressed_payload_v4_has_no_mapping_section_and_five_fields():
    payload = rmq.register_broker_body_compressed_payload(
        [TopicConfig("T", 1, 2, 6, attributes=None)], DataVersion(0, 1, None), version=407,
        mapping_infos=[rmq.topic_queue_mapping_info("T", "b")],
    )
    dv = b'{"counter":0,"timestamp":1}'
    assert payload == (
        struct.pack(">i", len(dv)) + dv + struct.pack(">i", 1) + struct.pack(">i", 18) + b"T 1 2 6 SINGLE_TAG"
        + struct.pack(">i", 2) + b"[]"
    )


def test_fj_dumps_bare_int_keys():
    assert fj_dumps({"a": {0: "x", 10: "y"}, "b": [1, True, None], "c": "中/"}) == '{"a":{0:"x",10:"y"},"b":[1,true,null],"c":"中/"}'


def test_lenient_parser_default_mode_equals_standard_mode():
    v, bare, quoted = parse_lenient(ROUTE_DEFAULT)
    assert bare == 2
    assert v == json.loads(ROUTE_STANDARD)
    assert parse_lenient(ROUTE_STANDARD)[1] == 0
    assert loads_lenient('{0:0,-1:{"k":[1.5,2e3,"s\\"\\u4E2D"]}}', int_keys=True) == {0: 0, -1: {"k": [1.5, 2000.0, 's"中']}}


@pytest.mark.parametrize("bad", ["{", '{"a":}', "{a:1}", "[1,]", '{"a":1} x', "", "nul"])
def test_lenient_parser_rejects_garbage(bad):
    with pytest.raises(ValueError):
        loads_lenient(bad)


def test_parse_properties():
    assert rmq.parse_properties("# c\n\na=1\nb=x=y\nc=\n") == {"a": "1", "b": "x=y", "c": ""}


def test_topic_not_exist_remark_is_two_lines():
    r = rmq.topic_not_exist_remark("X")
    assert r == (
        "No topic route info in name server for the topic: X\n"
        "See https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
    )


def test_register_ext_fields():
    body = b"{}"
    ext = rmq.register_broker_ext(cluster="c", broker_name="b", broker_addr="1.2.3.4:10911", body=body)
    assert ext == {
        "brokerAddr": "1.2.3.4:10911",
        "brokerId": "0",
        "brokerName": "b",
        "clusterName": "c",
        "compressed": "false",
        "bodyCrc32": str(crc32_masked(body)),
        "haServerAddr": "1.2.3.4:10912",
        "enableActingMaster": "false",
    }
    old = rmq.register_broker_ext(cluster="c", broker_name="b", broker_addr="a:1", enable_acting_master=None,
                                  heartbeat_timeout_millis=2000, zone_name="z")
    assert "enableActingMaster" not in old
    assert old["heartbeatTimeoutMillis"] == "2000" and old["__ZONE_NAME"] == "z"


def test_command_repr_is_short():
    c = Command(code=0, body=b"x" * 10000)
    assert len(repr(c)) < 600
