/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The route query's reader for the fast path (nsrv_route_query_peek,
 * include/nsrv/remoting.h). The generic decoder (cmd.c) copies a whole
 * command into the arena; a GET_ROUTEINFO_BY_TOPIC of the usual shape needs
 * only its opaque, version and topic, read here in place. It takes only
 * frames whose every byte it knows the generic decoder reads the same way, and
 * declines the rest (which then take the generic path: declining is always
 * correct). The differential test and fuzz target of the processor
 * (src/processor/tests/test_processor_route_fast.c, fuzz/fuzz_route_fast.c)
 * compare the two paths' replies. Pure; parses untrusted input.
 */
#include "nsrv/utf8.h"
#include "remoting_int.h"

static uint32_t be16(const uint8_t *p) {
    return (uint32_t)p[0] << 8 | p[1];
}

/* The key of the one ext entry taken, as it is on the wire: int16 length, then the name. */
static const uint8_t TOPIC_KEY[] = {0, 5, 't', 'o', 'p', 'i', 'c'};

/*
 * A ROCKETMQ header (proto/remoting.md §4) h[0..len) of exactly: code 105, any
 * language, any version, flag 0 (a request expecting a reply), no remark, and a map
 * of one entry, "topic", whose value is 1..NSRV_ROUTE_QUERY_TOPIC_MAX bytes of ASCII
 * without a NUL, ending where the header ends. The generic decoder keeps every
 * such byte as it is (nsrv_ascii_plain strings are copied unchanged) and the
 * handler reads no other field of it.
 */
static bool read_rocketmq(const uint8_t *h, size_t len, nsrv_route_query_t *out) {
    /* Fixed part, the entry's lengths and key, at least one byte of value. */
    if (len < NSRV_HDR_ROCKETMQ_FIXED + sizeof TOPIC_KEY + 4 + 1 ||
        be16(h) != NSRV_REQ_GET_ROUTEINFO_BY_TOPIC || nsrv_load_be32(h + 9) != 0 ||
        nsrv_load_be32(h + 13) != 0)
        return false;
    size_t map_len = len - NSRV_HDR_ROCKETMQ_FIXED;
    const uint8_t *m = h + NSRV_HDR_ROCKETMQ_FIXED;
    size_t topic_len = map_len - sizeof TOPIC_KEY - 4;
    if (nsrv_load_be32(h + 17) != map_len || memcmp(m, TOPIC_KEY, sizeof TOPIC_KEY) != 0 ||
        nsrv_load_be32(m + sizeof TOPIC_KEY) != topic_len || topic_len > NSRV_ROUTE_QUERY_TOPIC_MAX)
        return false;
    out->topic = m + sizeof TOPIC_KEY + 4;
    out->topic_len = topic_len;
    out->version = (int16_t)be16(h + 3);
    out->opaque = (int32_t)nsrv_load_be32(h + 5);
    return nsrv_ascii_plain(out->topic, topic_len);
}

/* A JSON header being read: the bytes left, and the fields seen. */
typedef struct {
    const uint8_t *p, *end;
    unsigned seen; /* a bit per key of json_keys */
} json_scan_t;

/* The members taken, each at most once, by their exact names (fastjson's, and the Go
 * client's). */
enum { J_CODE, J_EXT, J_FLAG, J_LANGUAGE, J_OPAQUE, J_REMARK, J_SERTYPE, J_VERSION, J_KEYS };
static const struct {
    const char *name;
    size_t len;
} json_keys[J_KEYS] = {
    [J_CODE] = {"code", 4},
    [J_EXT] = {"extFields", 9},
    [J_FLAG] = {"flag", 4},
    [J_LANGUAGE] = {"language", 8},
    [J_OPAQUE] = {"opaque", 6},
    [J_REMARK] = {"remark", 6},
    [J_SERTYPE] = {"serializeTypeCurrentRPC", 23},
    [J_VERSION] = {"version", 7},
};

static bool json_byte(json_scan_t *s, uint8_t c) {
    if (s->p == s->end || *s->p != c)
        return false;
    s->p++;
    return true;
}

/* Whether no byte of w is outside 0x20-0x7e or a backslash (the has-less and has-zero
 * tests are exact as yes/no answers). */
static inline bool json_word_plain(uint64_t w) {
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t bs = w ^ ('\\' * ones), del = w ^ (0x7f * ones);
    return !((w & high) | ((w - 0x20 * ones) & ~w & high) | ((bs - ones) & ~bs & high) |
             ((del - ones) & ~del & high));
}

/* Whether p[0..n) is printable ASCII without a backslash, a word at a time. */
static bool json_span_plain(const uint8_t *p, size_t n) {
    return nsrv__words_all(p, n, json_word_plain);
}

/*
 * A string without escapes, every byte printable ASCII: what the generic parser reads as
 * those very bytes. Anything else (an escape, a control or non-ASCII byte) declines.
 */
static bool json_plain_str(json_scan_t *s, const uint8_t **str, size_t *len) {
    if (!json_byte(s, '"'))
        return false;
    const uint8_t *close = memchr(s->p, '"', (size_t)(s->end - s->p));
    if (!close || !json_span_plain(s->p, (size_t)(close - s->p)))
        return false;
    *str = s->p;
    *len = (size_t)(close - s->p);
    s->p = close + 1;
    return true;
}

/* An int32 written plainly: an optional '-', then 1-10 digits without a leading zero, no
 * fraction or exponent, in range. */
static bool json_int(json_scan_t *s, int32_t *out) {
    bool neg = json_byte(s, '-');
    const uint8_t *start = s->p;
    int64_t v = 0;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9' && s->p - start < 11)
        v = v * 10 + (*s->p++ - '0');
    size_t n = (size_t)(s->p - start);
    if (n == 0 || n > 10 || (n > 1 && *start == '0') || (neg && v == 0))
        return false;
    if (neg)
        v = -v;
    if (v < INT32_MIN || v > INT32_MAX)
        return false;
    *out = (int32_t)v;
    return s->p == s->end || (*s->p != '.' && *s->p != 'e' && *s->p != 'E');
}

/* A member name of json_keys not seen before, and its colon; its index, or -1. The names
 * are compared in place with their closing quote and colon: no other name is taken. */
static int json_key(json_scan_t *s) {
    if (!json_byte(s, '"'))
        return -1;
    size_t left = (size_t)(s->end - s->p);
    for (int k = 0; k < J_KEYS; k++) {
        size_t n = json_keys[k].len;
        if (left < n + 2 || s->p[0] != (uint8_t)json_keys[k].name[0] ||
            memcmp(s->p, json_keys[k].name, n) != 0 || s->p[n] != '"' || s->p[n + 1] != ':')
            continue;
        if (s->seen & 1u << k)
            return -1; /* the generic decoder lets the last one win: not read here */
        s->seen |= 1u << k;
        s->p += n + 2;
        return k;
    }
    return -1;
}

/*
 * A JSON header (proto/remoting.md §3) h[0..len) of one object without whitespace whose
 * members, in any order, are: "code":105; "extFields":{"topic":"<topic>"}; and any of
 * "flag":0, "language":"<any plain string>", "opaque":<int32>, "remark":"",
 * "serializeTypeCurrentRPC":"<any plain string>", "version":<int32>. That is how the Java
 * client (fastjson) and the Go client write a route query. The generic decoder reads each
 * of these as written, takes a missing flag, opaque or version as 0 and ignores the
 * serialize type's name (the frame's type byte decides), and an empty remark is no remark.
 */
static bool read_json(const uint8_t *h, size_t len, nsrv_route_query_t *out) {
    json_scan_t s = {h, h + len, 0};
    int32_t code = 0, flag = 0;
    out->version = 0;
    out->opaque = 0;
    out->topic = NULL;
    if (!json_byte(&s, '{'))
        return false;
    do {
        const uint8_t *str;
        size_t slen;
        switch (json_key(&s)) {
        case J_CODE:
            if (!json_int(&s, &code))
                return false;
            break;
        case J_FLAG:
            if (!json_int(&s, &flag))
                return false;
            break;
        case J_OPAQUE:
            if (!json_int(&s, &out->opaque))
                return false;
            break;
        case J_VERSION:
            if (!json_int(&s, &out->version))
                return false;
            break;
        case J_LANGUAGE:
        case J_SERTYPE:
            if (!json_plain_str(&s, &str, &slen))
                return false;
            break;
        case J_REMARK:
            if (!json_plain_str(&s, &str, &slen) || slen != 0)
                return false;
            break;
        case J_EXT:
            /* Exactly {"topic":"<topic>"}. */
            if (!json_byte(&s, '{') || !json_plain_str(&s, &str, &slen) || slen != 5 ||
                memcmp(str, "topic", 5) != 0 || !json_byte(&s, ':') ||
                !json_plain_str(&s, &out->topic, &out->topic_len) || !json_byte(&s, '}'))
                return false;
            break;
        default:
            return false;
        }
    } while (json_byte(&s, ','));
    return json_byte(&s, '}') && s.p == s.end && code == NSRV_REQ_GET_ROUTEINFO_BY_TOPIC &&
           flag == 0 && out->topic && out->topic_len >= 1 &&
           out->topic_len <= NSRV_ROUTE_QUERY_TOPIC_MAX;
}

bool nsrv_route_query_peek(const uint8_t *frame, size_t frame_len, nsrv_route_query_t *out) {
    /* The frame's own lengths: N = frame_len - 4, a header with no body after it. */
    if (frame_len < 8 || nsrv_load_be32(frame) != frame_len - 4)
        return false;
    uint32_t word = nsrv_load_be32(frame + 4);
    size_t hdr_len = word & NSRV_HDR_LEN_MAX;
    if (hdr_len != frame_len - 8)
        return false;
    out->ser_type = (uint8_t)(word >> 24);
    if (out->ser_type == NSRV_SER_ROCKETMQ)
        return read_rocketmq(frame + 8, hdr_len, out);
    return out->ser_type == NSRV_SER_JSON && read_json(frame + 8, hdr_len, out);
}
