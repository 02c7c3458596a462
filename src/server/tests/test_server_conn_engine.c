/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The connection engine (src/server/conn_engine.h) without a socket: requests are real
 * RemotingCommand frames, decoded by this file's run hook whose request code says what to do
 * (reply, defer, take time, fail, be offloaded); its transmit hook plays a socket that
 * takes `room` bytes at once and queues the rest. The wire's replies are decoded again to
 * check their order; the light-first cases hold reads as the driver does (nsrv__ce_hold,
 * then nsrv__ce_run_held). The TLS cases put a real session (the crypto module linked in) between
 * an OpenSSL client on memory BIOs and the engine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "nsrv/crypto.h"
#include "../conn_engine.h"
#include "nsrv/alloc.h"
#include "nsrv/arena.h"
#include "nsrv/config.h"
#include "testlib.h"
#include "testlib_tls_client.h"

/* What the fake runner does with a request, by its code. */
enum {
    OP_ECHO = 1,  /* reply with the request's body */
    OP_DEFER,     /* reserve a reply slot (a durable write) */
    OP_ONEWAY,    /* no reply */
    OP_SLOW,      /* take 300 us, then reply */
    OP_BAD,       /* undecodable for the runner */
    OP_COSTLY,    /* a body to decode on a worker */
    OP_BIG_REPLY, /* reply with a 4 KiB body */
};

#define MAX_DEFERRED (NSRV_CE_MAX_SLOTS + 16)

typedef struct {
    nsrv_config_t cfg;
    nsrv_out_batch_t out;
    nsrv_ce_host_t host;
    nsrv_ce_t e;
    nsrv_arena_t arena;
    nsrv_buf_t wire; /* every reply byte transmitted, in order */
    nsrv_buf_t raw;  /* bytes sent as they are (TLS records) */
    size_t room;     /* what the socket takes now; the rest is queued */
    unsigned transmits;
    unsigned ran;    /* requests the runner ran */
    int last_opaque; /* of the last one */
    struct nsrv_reply_slot *deferred[MAX_DEFERRED];
    int deferred_opaque[MAX_DEFERRED];
    size_t n_deferred;
} fx_t;

static fx_t *fx;
static char big_body[64 * 1024];

static nsrv_cmd_t reply_to(const nsrv_cmd_t *req) {
    nsrv_cmd_t r = {.code = 0,
                    .opaque = req->opaque,
                    .flag = NSRV_FLAG_RESPONSE,
                    .ser_type = NSRV_SER_ROCKETMQ,
                    .body = req->body,
                    .body_len = req->body_len};
    return r;
}

nsrv_ce_run_t nsrv__ce_run(void *ud, nsrv_ce_t *e, const uint8_t *frame, size_t len,
                           uint64_t *now_ns, const char **why) {
    fx_t *f = ud;
    nsrv_arena_reset(&f->arena);
    nsrv_cmd_t req;
    assert_int_equal(nsrv_cmd_decode(frame, len, &f->arena, &req), 0);
    if (req.code == OP_BAD) {
        *why = "test: undecodable";
        return NSRV_CE_BAD;
    }
    if (req.code == OP_COSTLY)
        return NSRV_CE_OFFLOAD_COPY;
    f->ran++;
    f->last_opaque = req.opaque;
    nsrv__ce_request_started(e);
    nsrv_cmd_t r = reply_to(&req);
    switch (req.code) {
    case OP_DEFER:
        assert_true(f->n_deferred < MAX_DEFERRED);
        f->deferred_opaque[f->n_deferred] = req.opaque;
        f->deferred[f->n_deferred++] = nsrv__ce_reserve(e, 0, *now_ns);
        return NSRV_CE_RAN;
    case OP_ONEWAY:
        return NSRV_CE_RAN;
    case OP_SLOW:
        *now_ns += 300 * 1000;
        break;
    case OP_BIG_REPLY:
        r.body = (const uint8_t *)big_body;
        r.body_len = 4096;
        break;
    default:
        break;
    }
    nsrv__ce_reply(e, &r, NULL, 0);
    return NSRV_CE_RAN;
}

void nsrv__ce_send_raw(void *ud, nsrv_ce_t *e, const char *data, size_t len) {
    fx_t *f = ud;
    (void)e;
    nsrv_buf_append(&f->raw, data, len);
}

void nsrv__ce_transmit(void *ud, nsrv_ce_t *e) {
    fx_t *f = ud;
    struct iovec iov[NSRV_OUT_MAX_SEGS];
    unsigned n = nsrv__out_iov(f->host.out, iov);
    for (unsigned i = 0; i < n; i++)
        nsrv_buf_append(&f->wire, iov[i].iov_base, iov[i].iov_len);
    size_t total = f->host.out->total;
    /* A socket with bytes queued takes nothing more at once (as uv_try_write). */
    size_t took = e->out_pending ? 0 : (total < f->room ? total : f->room);
    f->room -= took;
    if (total > took)
        nsrv__ce_queued(e, total - took);
    f->transmits++;
    nsrv__out_reset(f->host.out);
}

static int setup(void **state) {
    (void)state;
    fx = nsrv_calloc(1, sizeof *fx);
    nsrv_config_init_defaults(&fx->cfg);
    nsrv__out_init(&fx->out);
    nsrv_arena_init(&fx->arena, 4096);
    nsrv_buf_init(&fx->wire);
    nsrv_buf_init(&fx->raw);
    fx->room = SIZE_MAX;
    fx->host = (nsrv_ce_host_t){.cfg = &fx->cfg, .out = &fx->out, .ud = fx};
    nsrv__ce_init(&fx->e, &fx->host, 1000);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    nsrv__ce_closed(&fx->e);
    for (size_t i = 0; i < fx->n_deferred; i++)
        if (fx->deferred[i])
            nsrv__ce_fill(fx->deferred[i], &(nsrv_cmd_t){.opaque = 0}, 0);
    nsrv__ce_free(&fx->e);
    nsrv_buf_deinit(&fx->wire);
    nsrv_buf_deinit(&fx->raw);
    nsrv_buf_deinit(&fx->host.tls_plain);
    nsrv_buf_deinit(&fx->host.tls_flat);
    nsrv_arena_deinit(&fx->arena);
    nsrv__out_deinit(&fx->out);
    nsrv_config_free(&fx->cfg);
    nsrv_free(fx);
    return 0;
}

/* Appends one request frame: code says what the runner does, opaque numbers it. */
static void put_req(nsrv_buf_t *b, int code, int opaque, size_t body_len) {
    nsrv_cmd_t c = {.code = code,
                    .opaque = opaque,
                    .ser_type = NSRV_SER_ROCKETMQ,
                    .body = (const uint8_t *)big_body,
                    .body_len = body_len};
    assert_int_equal(nsrv_cmd_encode(b, &c), 0);
}

/* The opaques of the replies on the wire, in order; returns how many. */
static size_t wire_opaques(int *out, size_t max) {
    size_t n = 0, off = 0;
    nsrv_arena_t a;
    nsrv_arena_init(&a, 4096);
    while (off < fx->wire.len) {
        size_t len = 0;
        assert_int_equal(nsrv_frame_peek((const uint8_t *)fx->wire.data + off, fx->wire.len - off,
                                         SIZE_MAX, &len),
                         0);
        nsrv_cmd_t r;
        assert_int_equal(nsrv_cmd_decode((const uint8_t *)fx->wire.data + off, len, &a, &r), 0);
        assert_true(r.flag & NSRV_FLAG_RESPONSE);
        assert_true(n < max);
        out[n++] = r.opaque;
        off += len;
    }
    nsrv_arena_deinit(&a);
    return n;
}

static void assert_wire_is_range(int first, int count) {
    int got[8192];
    size_t n = wire_opaques(got, 8192);
    assert_int_equal(n, (size_t)count);
    for (int i = 0; i < count; i++)
        assert_int_equal(got[i], first + i);
}

/* Fills the i-th deferred reply with the reply to request opaque. */
static unsigned fill_deferred(size_t i, int opaque, uint64_t now_ns) {
    nsrv_cmd_t r = {.opaque = opaque, .flag = NSRV_FLAG_RESPONSE, .ser_type = NSRV_SER_ROCKETMQ};
    unsigned act = nsrv__ce_fill(fx->deferred[i], &r, now_ns);
    fx->deferred[i] = NULL;
    return act;
}

static unsigned feed(const nsrv_buf_t *b, uint64_t now_ns) {
    return nsrv__ce_feed(&fx->e, (const uint8_t *)b->data, b->len, now_ns);
}

/* ---- pipelining and order ---- */

static void test_pipelined_requests_reply_in_order_in_one_write(void **state) {
    (void)state;
    nsrv_buf_t b = NSRV_BUF_INIT;
    for (int i = 1; i <= 10; i++)
        put_req(&b, i == 5 ? OP_ONEWAY : OP_ECHO, i, (size_t)i * 100);
    unsigned act = feed(&b, 5000000000u);
    assert_int_equal(act, 0); /* nothing to do but what was done: still reading */
    assert_int_equal(fx->ran, 10);
    assert_int_equal(fx->transmits, 1);
    int got[16];
    assert_int_equal(wire_opaques(got, 16), 9);
    for (int i = 0, want = 1; i < 9; i++, want++) {
        if (want == 5)
            want++; /* the oneway request has no reply */
        assert_int_equal(got[i], want);
    }
    assert_int_equal(fx->e.last_active_ms, 5000);
    assert_int_equal(fx->e.in.cap, 0); /* whole frames: no bytes of its own kept */
    nsrv_buf_deinit(&b);
}

static void test_frames_split_anywhere_run_once_whole(void **state) {
    (void)state;
    nsrv_buf_t b = NSRV_BUF_INIT;
    for (int i = 1; i <= 3; i++)
        put_req(&b, OP_ECHO, i, 3000);
    /* Byte runs of 1, 7, 1000... : the first lands outside, the rest in the engine's own
     * buffer where nsrv__ce_read_room says, as the driver's reads do. */
    size_t off = 0, step = 1;
    while (off < b.len) {
        size_t n = b.len - off < step ? b.len - off : step;
        size_t room = 0;
        char *own = nsrv__ce_read_room(&fx->e, &room);
        if (own) {
            n = n < room ? n : room;
            memcpy(own, b.data + off, n);
            nsrv__ce_feed_landed(&fx->e, n, 1000000);
        } else {
            nsrv__ce_feed(&fx->e, (const uint8_t *)b.data + off, n, 1000000);
        }
        off += n;
        step = step * 7 + 1;
    }
    assert_int_equal(fx->ran, 3);
    assert_wire_is_range(1, 3);
    assert_int_equal(fx->e.in.cap, 0); /* freed once empty */
    nsrv_buf_deinit(&b);
}

/* ---- the batch budget ---- */

static void test_batch_yields_after_256_requests(void **state) {
    (void)state;
    nsrv_buf_t b = NSRV_BUF_INIT;
    for (int i = 0; i < 300; i++)
        put_req(&b, OP_ECHO, i, 0);
    unsigned act = feed(&b, 1);
    assert_int_equal(fx->ran, NSRV_CE_BATCH_MAX_FRAMES);
    assert_true(act & NSRV_CE_ACT_YIELD);
    assert_true(act & NSRV_CE_ACT_READ_OFF);
    assert_int_equal(fx->host.batch_yields_total, 1);
    assert_wire_is_range(0, NSRV_CE_BATCH_MAX_FRAMES); /* sent before yielding */
    act = nsrv__ce_resume(&fx->e, 2);
    assert_int_equal(fx->ran, 300);
    assert_true(act & NSRV_CE_ACT_READ_ON);
    assert_false(act & NSRV_CE_ACT_YIELD);
    assert_wire_is_range(0, 300);
    nsrv_buf_deinit(&b);
}

static void test_batch_yields_after_1ms_but_runs_at_least_16(void **state) {
    (void)state;
    nsrv_buf_t b = NSRV_BUF_INIT;
    for (int i = 0; i < 40; i++)
        put_req(&b, OP_SLOW, i, 0); /* 300 us each: 1 ms is over after 4 */
    unsigned act = feed(&b, 1);
    assert_int_equal(fx->ran, NSRV_CE_BATCH_MIN_FRAMES);
    assert_true(act & NSRV_CE_ACT_YIELD);
    act = nsrv__ce_resume(&fx->e, 10000000);
    assert_int_equal(fx->ran, 2 * NSRV_CE_BATCH_MIN_FRAMES);
    assert_true(act & NSRV_CE_ACT_YIELD); /* yielded again: still paused */
    assert_false(act & NSRV_CE_ACT_READ_ON);
    nsrv__ce_resume(&fx->e, 20000000);
    assert_int_equal(fx->ran, 40);
    assert_wire_is_range(0, 40);
    nsrv_buf_deinit(&b);
}

/* ---- light first ---- */

#define READ_GAP_NS (100 * 1000) /* a connection asking flat out: a read every 100 us */

/* A plaintext read as the driver handles it: held when the connection is busy, else fed.
 * Returns whether it was held. */
static bool read_one(const nsrv_buf_t *b, uint64_t now_ns) {
    if (nsrv__ce_hold(&fx->e, (const uint8_t *)b->data, b->len, now_ns))
        return true;
    feed(b, now_ns);
    return false;
}

/* NSRV_CE_BUSY_STREAK close reads, run as they come (numbered 0 on): the next close read is
 * held. Returns the time of the last. */
static uint64_t make_busy(uint64_t t) {
    nsrv_buf_t b = NSRV_BUF_INIT;
    for (int i = 0; i < NSRV_CE_BUSY_STREAK; i++) {
        nsrv_buf_reset(&b);
        put_req(&b, OP_ECHO, i, 10);
        t += READ_GAP_NS;
        assert_false(read_one(&b, t));
    }
    nsrv_buf_deinit(&b);
    return t;
}

static void test_light_first_a_connection_asking_flat_out_is_held(void **state) {
    (void)state;
    uint64_t t = make_busy(1000000000u);
    assert_int_equal(fx->ran, NSRV_CE_BUSY_STREAK);
    nsrv_buf_t b = NSRV_BUF_INIT;
    put_req(&b, OP_ECHO, 100, 10);
    put_req(&b, OP_ECHO, 101, 10);
    assert_true(read_one(&b, t + READ_GAP_NS));
    assert_int_equal(fx->ran, NSRV_CE_BUSY_STREAK); /* held: nothing ran, nothing sent */
    assert_int_equal(fx->host.reads_held_total, 1);
    assert_false(nsrv__ce_finished(&fx->e)); /* held requests are requests in flight */
    unsigned act = nsrv__ce_run_held(&fx->e, t + 2 * READ_GAP_NS);
    assert_int_equal(act, NSRV_CE_ACT_INPUT); /* its held buffer freed */
    assert_int_equal(fx->ran, NSRV_CE_BUSY_STREAK + 2);
    assert_int_equal(fx->last_opaque, 101);
    assert_int_equal(fx->e.in.cap, 0);
    assert_int_equal(nsrv__ce_run_held(&fx->e, t + 3 * READ_GAP_NS), 0); /* nothing twice */
    assert_int_equal(fx->ran, NSRV_CE_BUSY_STREAK + 2);
    nsrv_buf_deinit(&b);
}

static void test_light_first_a_clients_route_update_is_never_held(void **state) {
    (void)state;
    /* A client asking its topics one after another, a round trip apart, then again 30 s on:
     * the first NSRV_CE_BUSY_STREAK of a round are light, a pause starts over. */
    nsrv_buf_t b = NSRV_BUF_INIT;
    uint64_t t = 1000000000u;
    for (int round = 0; round < 3; round++, t += 30000000000u)
        for (int i = 0; i < NSRV_CE_BUSY_STREAK; i++) {
            nsrv_buf_reset(&b);
            put_req(&b, OP_ECHO, round * 100 + i, 10);
            assert_false(read_one(&b, t + (uint64_t)i * READ_GAP_NS));
        }
    assert_int_equal(fx->ran, 3 * NSRV_CE_BUSY_STREAK);
    assert_int_equal(fx->host.reads_held_total, 0);
    /* A gap over NSRV_CE_BUSY_GAP_NS ends a busy streak too. */
    t = make_busy(t);
    nsrv_buf_reset(&b);
    put_req(&b, OP_ECHO, 999, 10);
    assert_false(read_one(&b, t + NSRV_CE_BUSY_GAP_NS));
    assert_int_equal(fx->last_opaque, 999);
    nsrv_buf_deinit(&b);
}

static void test_light_first_held_latency_counts_from_the_read(void **state) {
    (void)state;
    uint64_t t = make_busy(1000000000u);
    nsrv_buf_t b = NSRV_BUF_INIT;
    put_req(&b, OP_DEFER, 1, 0); /* its slot keeps the start of its turn */
    put_req(&b, OP_DEFER, 2, 0);
    uint64_t read_ns = t + READ_GAP_NS;
    assert_true(read_one(&b, read_ns));
    nsrv__ce_run_held(&fx->e, read_ns + 5000000); /* run 5 ms later */
    assert_int_equal(fx->n_deferred, 2);
    assert_int_equal(fx->deferred[0]->start_ns, read_ns);
    /* The next request's turn starts when the one before ended, as in any batch. */
    assert_int_equal(fx->deferred[1]->start_ns, read_ns);
    fill_deferred(0, 1, read_ns + 6000000);
    fill_deferred(1, 2, read_ns + 6000000);
    nsrv_buf_deinit(&b);
}

static void test_light_first_the_wait_takes_nothing_from_the_batch_budget(void **state) {
    (void)state;
    uint64_t t = make_busy(1000000000u);
    nsrv_buf_t b = NSRV_BUF_INIT;
    for (int i = 0; i < 300; i++)
        put_req(&b, OP_ECHO, i, 0);
    assert_true(read_one(&b, t + READ_GAP_NS));
    /* Run 2 ms after its read: the budget counts from the run, so a whole batch runs. */
    unsigned act = nsrv__ce_run_held(&fx->e, t + READ_GAP_NS + 2000000);
    assert_int_equal(fx->ran, NSRV_CE_BUSY_STREAK + NSRV_CE_BATCH_MAX_FRAMES);
    assert_true(act & NSRV_CE_ACT_YIELD);
    nsrv__ce_resume(&fx->e, t + 3000000);
    assert_int_equal(fx->ran, NSRV_CE_BUSY_STREAK + 300);
    nsrv_buf_deinit(&b);
}

static void test_light_first_a_read_behind_held_input_runs_both_in_order(void **state) {
    (void)state;
    uint64_t t = make_busy(1000000000u);
    nsrv_buf_t b = NSRV_BUF_INIT;
    put_req(&b, OP_ECHO, 100, 10);
    put_req(&b, OP_ECHO, 101, 10);
    size_t first = b.len / 3; /* the first request and part of the second held */
    assert_true(nsrv__ce_hold(&fx->e, (const uint8_t *)b.data, first, t + READ_GAP_NS));
    size_t room = 0;
    char *own = nsrv__ce_read_room(&fx->e, &room); /* the rest lands behind it */
    assert_non_null(own);
    assert_true(room >= b.len - first);
    memcpy(own, b.data + first, b.len - first);
    nsrv__ce_feed_landed(&fx->e, b.len - first, t + 2 * READ_GAP_NS);
    assert_int_equal(fx->ran, NSRV_CE_BUSY_STREAK + 2);
    assert_int_equal(fx->last_opaque, 101);
    assert_int_equal(nsrv__ce_run_held(&fx->e, t + 3 * READ_GAP_NS), 0); /* already run */
    assert_int_equal(fx->ran, NSRV_CE_BUSY_STREAK + 2);
    nsrv_buf_deinit(&b);
}

static void test_light_first_holds_nothing_in_shutdown_or_behind_kept_input(void **state) {
    (void)state;
    uint64_t t = make_busy(1000000000u);
    nsrv_buf_t b = NSRV_BUF_INIT;
    put_req(&b, OP_ECHO, 100, 10);
    /* Behind a partial frame the engine keeps, the rest joins it and runs at once. */
    nsrv__ce_feed(&fx->e, (const uint8_t *)b.data, 5, t += READ_GAP_NS);
    assert_false(nsrv__ce_hold(&fx->e, (const uint8_t *)b.data + 5, b.len - 5, t += READ_GAP_NS));
    nsrv__ce_feed(&fx->e, (const uint8_t *)b.data + 5, b.len - 5, t);
    assert_int_equal(fx->last_opaque, 100);
    /* Shutting down, every request runs as it comes. */
    fx->host.shutting_down = true;
    assert_false(read_one(&b, t += READ_GAP_NS));
    assert_int_equal(fx->ran, NSRV_CE_BUSY_STREAK + 2);
    assert_int_equal(fx->host.reads_held_total, 0);
    nsrv_buf_deinit(&b);
}

/* ---- back-pressure and caps ---- */

static void test_backpressure_stops_reading_and_resumes_at_half(void **state) {
    (void)state;
    fx->cfg.conn_output_limit_bytes = 16 * 1024;
    fx->room = 0; /* a peer that reads nothing */
    nsrv_buf_t b = NSRV_BUF_INIT;
    for (int i = 0; i < 20; i++)
        put_req(&b, OP_BIG_REPLY, i, 0);
    unsigned act = feed(&b, 1);
    /* Every reply of the batch is queued at its end; then the limit holds the rest. */
    assert_true(act & NSRV_CE_ACT_READ_OFF);
    assert_true(nsrv__ce_blocked(&fx->e));
    unsigned ran = fx->ran;
    assert_int_equal(ran, 20); /* one batch: the limit is checked between batches */
    size_t queued = fx->e.out_pending;
    assert_true(queued > 16 * 1024);
    /* More requests arrive while blocked: kept, not run. */
    nsrv_buf_t more = NSRV_BUF_INIT;
    put_req(&more, OP_ECHO, 100, 0);
    act = feed(&more, 2);
    assert_int_equal(fx->ran, 20);
    assert_true(fx->e.in.len > fx->e.in_off);
    /* Drained to just above half: still paused. */
    size_t to_half = queued - 8 * 1024;
    nsrv__ce_write_done(&fx->e, to_half - 1);
    act = nsrv__ce_drained(&fx->e, 3);
    assert_int_equal(fx->ran, 20);
    assert_false(act & NSRV_CE_ACT_READ_ON);
    /* At half: the held request runs, reading resumes. */
    fx->room = SIZE_MAX;
    nsrv__ce_write_done(&fx->e, 1);
    act = nsrv__ce_drained(&fx->e, 4);
    assert_int_equal(fx->ran, 21);
    assert_true(act & NSRV_CE_ACT_READ_ON);
    assert_int_equal(fx->last_opaque, 100);
    nsrv_buf_deinit(&more);
    nsrv_buf_deinit(&b);
}

static void test_slot_cap_stops_reading(void **state) {
    (void)state;
    nsrv_buf_t b = NSRV_BUF_INIT;
    for (int i = 0; i < NSRV_CE_MAX_SLOTS; i++)
        put_req(&b, OP_DEFER, i, 0);
    put_req(&b, OP_ECHO, NSRV_CE_MAX_SLOTS, 0);
    unsigned act = 0;
    for (int turn = 0; turn < 64 && fx->n_deferred < NSRV_CE_MAX_SLOTS; turn++)
        act = turn == 0 ? feed(&b, 1) : nsrv__ce_resume(&fx->e, 1);
    assert_int_equal(fx->n_deferred, NSRV_CE_MAX_SLOTS);
    assert_true(nsrv__ce_blocked(&fx->e));
    assert_false(fx->e.reading);
    (void)act;
    /* One reply sent: under the cap again, the last request runs. */
    act = fill_deferred(0, 0, 2);
    assert_int_equal(fx->ran, NSRV_CE_MAX_SLOTS + 1);
    assert_true(act & NSRV_CE_ACT_READ_ON);
    nsrv_buf_deinit(&b);
}

/* ---- deferred replies keep the order ---- */

static void test_replies_wait_behind_a_deferred_one(void **state) {
    (void)state;
    nsrv_buf_t b = NSRV_BUF_INIT;
    put_req(&b, OP_ECHO, 1, 10);
    put_req(&b, OP_DEFER, 2, 0);
    put_req(&b, OP_ECHO, 3, 10);
    put_req(&b, OP_DEFER, 4, 0);
    put_req(&b, OP_ECHO, 5, 10);
    feed(&b, 1);
    assert_int_equal(fx->ran, 5);
    assert_wire_is_range(1, 1); /* only the reply before the first slot */
    assert_int_equal(fx->host.replies_pending, 2);
    assert_true(fx->e.held_bytes > 0);
    /* The second slot fills first: nothing may overtake the first. */
    fill_deferred(1, 4, 2);
    assert_wire_is_range(1, 1);
    fill_deferred(0, 2, 3);
    assert_wire_is_range(1, 5);
    assert_int_equal(fx->host.replies_pending, 0);
    assert_int_equal(fx->e.held_bytes, 0);
    assert_int_equal(fx->e.n_slots, 0);
    nsrv_buf_deinit(&b);
}

static void test_close_orphans_a_waiting_slot(void **state) {
    (void)state;
    nsrv_buf_t b = NSRV_BUF_INIT;
    put_req(&b, OP_DEFER, 1, 0);
    put_req(&b, OP_ECHO, 2, 10);
    feed(&b, 1);
    nsrv__ce_closed(&fx->e);
    unsigned transmits = fx->transmits;
    unsigned act = fill_deferred(0, 1, 2);
    assert_int_equal(act, 0);
    assert_int_equal(fx->transmits, transmits); /* nothing sent on a closed connection */
    assert_int_equal(fx->host.replies_pending, 0);
    nsrv_buf_deinit(&b);
}

/* ---- bad frames ---- */

static void test_bad_length_closes(void **state) {
    (void)state;
    const uint8_t bad[] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
    unsigned act = nsrv__ce_feed(&fx->e, bad, sizeof bad, 1);
    assert_true(act & NSRV_CE_ACT_CLOSE);
    assert_string_equal(fx->e.close_why, "bad frame length");
    assert_int_equal(fx->host.bad_frames_total, 1);
    assert_int_equal(nsrv__ce_feed(&fx->e, bad, sizeof bad, 2), 0); /* closed: ignored */
}

static void test_undecodable_request_closes_with_the_runners_reason(void **state) {
    (void)state;
    nsrv_buf_t b = NSRV_BUF_INIT;
    put_req(&b, OP_BAD, 1, 0);
    put_req(&b, OP_ECHO, 2, 0);
    unsigned act = feed(&b, 1);
    assert_true(act & NSRV_CE_ACT_CLOSE);
    assert_string_equal(fx->e.close_why, "test: undecodable");
    assert_int_equal(fx->ran, 0); /* nothing behind it runs */
    assert_int_equal(fx->host.bad_frames_total, 1);
    nsrv_buf_deinit(&b);
}

/* ---- offload ---- */

static void test_big_frame_goes_to_a_worker_and_order_holds(void **state) {
    (void)state;
    fx->cfg.big_frame_worker_bytes = 8 * 1024;
    nsrv_buf_t b = NSRV_BUF_INIT;
    put_req(&b, OP_ECHO, 1, 10);
    size_t big_at = b.len;
    put_req(&b, OP_ECHO, 2, 20000);
    size_t big_len = b.len - big_at;
    put_req(&b, OP_ECHO, 3, 10);
    unsigned act = feed(&b, 1);
    assert_true(act & NSRV_CE_ACT_OFFLOAD);
    assert_true(act & NSRV_CE_ACT_READ_OFF);
    assert_true(nsrv__ce_blocked(&fx->e));
    assert_int_equal(fx->ran, 1);
    assert_wire_is_range(1, 1);
    nsrv_buf_t frame;
    size_t off, len;
    nsrv__ce_take_offload(&fx->e, &frame, &off, &len);
    assert_int_equal(len, big_len);
    assert_memory_equal(frame.data + off, b.data + big_at, big_len);
    /* While the job runs, more input waits. */
    nsrv_buf_t more = NSRV_BUF_INIT;
    put_req(&more, OP_ECHO, 4, 10);
    feed(&more, 2);
    assert_int_equal(fx->ran, 1);
    /* The worker decoded it; the driver runs it as the runner would, then reports. */
    uint64_t now = 3;
    const char *why = NULL;
    assert_int_equal(nsrv__ce_run(fx, &fx->e, (const uint8_t *)frame.data + off, len, &now, &why),
                     NSRV_CE_RAN);
    nsrv__ce_flush(&fx->e);
    act = nsrv__ce_job_done(&fx->e);
    assert_true(act & NSRV_CE_ACT_YIELD); /* the rest runs on the next loop turn */
    assert_int_equal(fx->ran, 2);
    act = nsrv__ce_resume(&fx->e, 4);
    assert_true(act & NSRV_CE_ACT_READ_ON);
    assert_wire_is_range(1, 4);
    nsrv_buf_deinit(&frame);
    nsrv_buf_deinit(&more);
    nsrv_buf_deinit(&b);
}

static void test_costly_body_is_copied_to_a_worker(void **state) {
    (void)state;
    nsrv_buf_t b = NSRV_BUF_INIT;
    put_req(&b, OP_COSTLY, 1, 5000);
    put_req(&b, OP_ECHO, 2, 10);
    unsigned act = feed(&b, 1);
    assert_true(act & NSRV_CE_ACT_OFFLOAD);
    nsrv_buf_t frame;
    size_t off, len;
    nsrv__ce_take_offload(&fx->e, &frame, &off, &len);
    size_t first_len = 0;
    assert_int_equal(nsrv_frame_peek((const uint8_t *)b.data, b.len, SIZE_MAX, &first_len), 0);
    assert_int_equal(len, first_len);
    assert_memory_equal(frame.data + off, b.data, len);
    assert_int_equal(fx->ran, 0);
    assert_true(fx->e.in.len - fx->e.in_off > 0); /* the next request is kept */
    nsrv_buf_deinit(&frame);
    nsrv_buf_deinit(&b);
}

static void test_close_during_a_job(void **state) {
    (void)state;
    fx->cfg.big_frame_worker_bytes = 1024;
    nsrv_buf_t b = NSRV_BUF_INIT;
    put_req(&b, OP_ECHO, 1, 4000);
    assert_true(feed(&b, 1) & NSRV_CE_ACT_OFFLOAD);
    nsrv__ce_closed(&fx->e);
    assert_false(nsrv__ce_blocked(&fx->e));
    assert_int_equal(nsrv__ce_job_done(&fx->e), 0); /* a closed connection runs nothing */
    assert_int_equal(nsrv__ce_resume(&fx->e, 2), 0);
    nsrv_buf_deinit(&b);
}

/* ---- idle and stuck readers ---- */

static void test_idle_connection_is_closed(void **state) {
    (void)state;
    uint64_t idle = 120000;
    assert_int_equal(nsrv__ce_tick(&fx->e, 1000 + idle - 1, idle, 0), 0);
    unsigned act = nsrv__ce_tick(&fx->e, 1000 + idle, idle, 0);
    assert_int_equal(act, NSRV_CE_ACT_CLOSE);
    assert_string_equal(fx->e.close_why, "idle");
    assert_false(fx->e.reset_on_close);
}

static void test_idle_limit_zero_never_closes(void **state) {
    (void)state;
    assert_int_equal(nsrv__ce_tick(&fx->e, UINT64_MAX / 2, 0, 0), 0);
}

static void test_stuck_reader_is_reset_a_slow_one_is_not(void **state) {
    (void)state;
    fx->room = 0;
    nsrv_buf_t b = NSRV_BUF_INIT;
    put_req(&b, OP_BIG_REPLY, 1, 0);
    feed(&b, 1000 * 1000000ull); /* at 1000 ms */
    assert_int_equal(fx->e.out_pending, fx->wire.len);
    size_t queued = fx->e.out_pending;
    uint64_t idle = 10000;
    /* A slow reader: a few bytes drained per tick keep it alive past the idle time. */
    uint64_t t = 1000;
    for (size_t left = queued; t < 1000 + 3 * idle; t += 1000) {
        left -= 10;
        assert_int_equal(nsrv__ce_tick(&fx->e, t, idle, left), 0);
    }
    /* Then it stops: reset once the idle time passes with no byte drained. */
    size_t left = queued - (size_t)(3 * idle / 1000) * 10;
    uint64_t last_progress = t - 1000;
    assert_int_equal(nsrv__ce_tick(&fx->e, last_progress + idle - 1, idle, left), 0);
    unsigned act = nsrv__ce_tick(&fx->e, last_progress + idle, idle, left);
    assert_true(act & NSRV_CE_ACT_CLOSE);
    assert_true(act & NSRV_CE_ACT_STALLED);
    assert_true(fx->e.reset_on_close);
    assert_string_equal(fx->e.close_why, "peer stopped reading");
    nsrv_buf_deinit(&b);
}

/* ---- shutdown draining ---- */

static void test_shutdown_closes_a_served_connection_once_drained(void **state) {
    (void)state;
    fx->host.shutting_down = true;
    fx->room = 100; /* the reply does not fit at once */
    nsrv_buf_t b = NSRV_BUF_INIT;
    put_req(&b, OP_BIG_REPLY, 1, 0);
    unsigned act = feed(&b, 1);
    assert_true(fx->e.served_in_shutdown);
    assert_false(act & NSRV_CE_ACT_FINISH); /* its reply is still queued */
    nsrv__ce_write_done(&fx->e, fx->e.out_pending);
    act = nsrv__ce_drained(&fx->e, 2);
    assert_true(act & NSRV_CE_ACT_FINISH);
    nsrv_buf_deinit(&b);
}

static void test_shutdown_waits_for_a_partial_request_and_a_slot(void **state) {
    (void)state;
    fx->host.shutting_down = true;
    fx->host.idle_grace_over = true;
    nsrv_buf_t b = NSRV_BUF_INIT;
    put_req(&b, OP_DEFER, 1, 0);
    put_req(&b, OP_ECHO, 2, 100);
    unsigned act = nsrv__ce_feed(&fx->e, (const uint8_t *)b.data, b.len - 10, 1);
    assert_false(act & NSRV_CE_ACT_FINISH); /* a slot and a partial request */
    act = fill_deferred(0, 1, 2);
    assert_false(act & NSRV_CE_ACT_FINISH); /* still the partial request */
    act = nsrv__ce_feed(&fx->e, (const uint8_t *)b.data + b.len - 10, 10, 3);
    assert_true(act & NSRV_CE_ACT_FINISH);
    assert_wire_is_range(1, 2);
    nsrv_buf_deinit(&b);
}

static void test_shutdown_unserved_connection_waits_for_the_grace(void **state) {
    (void)state;
    fx->host.shutting_down = true;
    assert_false(nsrv__ce_finished(&fx->e));
    fx->host.idle_grace_over = true;
    assert_true(nsrv__ce_finished(&fx->e));
}

/* ---- TLS records in and out ---- */

extern const nsrv_crypto_api_t nsrv_crypto_module_v1; /* linked in (nsrv_crypto_impl) */

typedef struct {
    nsrv_tls_ctx_t *server_ctx;
    SSL_CTX *client_ctx;
    SSL *client;
    BIO *c_in, *c_out; /* the client's side of the wire */
    unsigned acts;     /* every action the engine returned */
} tls_pair_t;

/* The client's pending records to the engine in pieces of step, the engine's to the client,
 * until neither side has anything to say. */
static void tls_pump(tls_pair_t *p, size_t step, uint64_t now_ns) {
    char buf[4096];
    for (int round = 0; round < 64; round++) {
        bool moved = false;
        int n;
        while (!fx->e.closed &&
               (n = BIO_read(p->c_out, buf, (int)(step < sizeof buf ? step : sizeof buf))) > 0) {
            p->acts |= nsrv__ce_feed_tls(&fx->e, buf, (size_t)n, now_ns);
            moved = true;
        }
        if (fx->raw.len) {
            assert_int_equal(BIO_write(p->c_in, fx->raw.data, (int)fx->raw.len), (int)fx->raw.len);
            nsrv_buf_reset(&fx->raw);
            moved = true;
        }
        if (!SSL_is_init_finished(p->client)) {
            SSL_do_handshake(p->client);
            ERR_clear_error();
            moved = moved || BIO_ctrl_pending(p->c_out) > 0;
        }
        if (!moved)
            return;
    }
}

static void tls_open(tls_pair_t *p) {
    const nsrv_crypto_api_t *cr = &nsrv_crypto_module_v1;
    memset(p, 0, sizeof *p);
    nsrv_config_t cfg;
    nsrv_config_init_defaults(&cfg);
    nsrv_free(cfg.tls_config_file); /* nothing of the machine's */
    cfg.tls_config_file = nsrv_strdup("");
    char err[512] = "";
    p->server_ctx = cr->tls_ctx_create(&cfg, err, sizeof err);
    nsrv_config_free(&cfg);
    assert_non_null(p->server_ctx);
    nsrv_tls_session_t *session = cr->session_new(cr->tls_ctx_ssl(p->server_ctx));
    assert_non_null(session);
    nsrv__ce_start_tls(&fx->e, cr, session);
    p->client = nsrv_test_tls_client_start(&p->client_ctx, &p->c_in, &p->c_out);
}

/* The session goes with the engine (teardown); the context and the client here. */
static void tls_close(tls_pair_t *p) {
    SSL_free(p->client);
    SSL_CTX_free(p->client_ctx);
    nsrv__ce_free(&fx->e);
    nsrv_crypto_module_v1.tls_ctx_destroy(p->server_ctx);
}

/* What the client can decrypt now, appended to out. */
static void client_read_all(tls_pair_t *p, nsrv_buf_t *out) {
    char buf[4096];
    int n;
    while ((n = SSL_read(p->client, buf, sizeof buf)) > 0)
        nsrv_buf_append(out, buf, (size_t)n);
    ERR_clear_error();
}

static void test_tls_records_in_and_out(void **state) {
    (void)state;
    tls_pair_t p;
    tls_open(&p);
    tls_pump(&p, 7, 1); /* the handshake, fed in pieces of 7 bytes */
    assert_true(SSL_is_init_finished(p.client));
    assert_true(p.acts & NSRV_CE_ACT_TLS_UP);
    assert_int_equal(fx->host.tls_handshakes_ok, 1);
    /* Three pipelined requests, one with a body larger than a record, in small pieces. */
    nsrv_buf_t b = NSRV_BUF_INIT;
    put_req(&b, OP_ECHO, 1, 10);
    put_req(&b, OP_ECHO, 2, 40000);
    put_req(&b, OP_ECHO, 3, 10);
    assert_int_equal(SSL_write(p.client, b.data, (int)b.len), (int)b.len);
    p.acts = 0;
    tls_pump(&p, 997, 2);
    assert_false(p.acts & NSRV_CE_ACT_CLOSE);
    assert_int_equal(fx->ran, 3);
    assert_int_equal(fx->transmits, 0); /* no plaintext reply reached the socket */
    /* The client decrypts the replies, in order. */
    nsrv_buf_t got = NSRV_BUF_INIT;
    client_read_all(&p, &got);
    nsrv_buf_append(&fx->wire, got.data, got.len);
    assert_wire_is_range(1, 3);
    nsrv_buf_deinit(&got);
    nsrv_buf_deinit(&b);
    tls_close(&p);
}

static void test_tls_partial_record_is_a_request_in_flight(void **state) {
    (void)state;
    tls_pair_t p;
    tls_open(&p);
    tls_pump(&p, 4096, 1);
    fx->host.shutting_down = true;
    fx->host.idle_grace_over = true;
    nsrv_buf_t b = NSRV_BUF_INIT;
    put_req(&b, OP_ECHO, 1, 10);
    assert_int_equal(SSL_write(p.client, b.data, (int)b.len), (int)b.len);
    char rec[512];
    int n = BIO_read(p.c_out, rec, sizeof rec);
    assert_true(n > 10);
    unsigned act = nsrv__ce_feed_tls(&fx->e, rec, 10, 2);
    assert_false(act & NSRV_CE_ACT_FINISH);
    assert_false(nsrv__ce_finished(&fx->e)); /* part of a record: a request in flight */
    act = nsrv__ce_feed_tls(&fx->e, rec + 10, (size_t)n - 10, 3);
    assert_int_equal(fx->ran, 1);
    assert_true(act & NSRV_CE_ACT_FINISH);
    nsrv_buf_deinit(&b);
    tls_close(&p);
}

static void test_tls_close_notify_closes_after_the_requests_before_it(void **state) {
    (void)state;
    tls_pair_t p;
    tls_open(&p);
    tls_pump(&p, 4096, 1);
    nsrv_buf_t b = NSRV_BUF_INIT;
    put_req(&b, OP_ECHO, 1, 10);
    assert_int_equal(SSL_write(p.client, b.data, (int)b.len), (int)b.len);
    SSL_shutdown(p.client);
    p.acts = 0;
    tls_pump(&p, 4096, 2);
    assert_int_equal(fx->ran, 1);
    assert_true(p.acts & NSRV_CE_ACT_CLOSE);
    assert_string_equal(fx->e.close_why, "peer sent close_notify");
    nsrv_buf_deinit(&b);
    tls_close(&p);
}

static void test_tls_garbage_fails_the_handshake(void **state) {
    (void)state;
    tls_pair_t p;
    tls_open(&p);
    static const char junk[] = "\x16\x03\x01\x00\x05hello, not a ClientHello";
    unsigned act = nsrv__ce_feed_tls(&fx->e, junk, sizeof junk - 1, 1);
    assert_true(act & NSRV_CE_ACT_CLOSE);
    assert_non_null(fx->e.close_why);
    assert_int_equal(fx->host.tls_handshakes_failed, 1);
    assert_int_equal(fx->ran, 0);
    tls_close(&p);
}

int main(void) {
    memset(big_body, 'b', sizeof big_body);
    const struct CMUnitTest tests[] = {
        NSRV_FIXTURE_TEST(test_pipelined_requests_reply_in_order_in_one_write),
        NSRV_FIXTURE_TEST(test_frames_split_anywhere_run_once_whole),
        NSRV_FIXTURE_TEST(test_batch_yields_after_256_requests),
        NSRV_FIXTURE_TEST(test_batch_yields_after_1ms_but_runs_at_least_16),
        NSRV_FIXTURE_TEST(test_light_first_a_connection_asking_flat_out_is_held),
        NSRV_FIXTURE_TEST(test_light_first_a_clients_route_update_is_never_held),
        NSRV_FIXTURE_TEST(test_light_first_held_latency_counts_from_the_read),
        NSRV_FIXTURE_TEST(test_light_first_the_wait_takes_nothing_from_the_batch_budget),
        NSRV_FIXTURE_TEST(test_light_first_a_read_behind_held_input_runs_both_in_order),
        NSRV_FIXTURE_TEST(test_light_first_holds_nothing_in_shutdown_or_behind_kept_input),
        NSRV_FIXTURE_TEST(test_backpressure_stops_reading_and_resumes_at_half),
        NSRV_FIXTURE_TEST(test_slot_cap_stops_reading),
        NSRV_FIXTURE_TEST(test_replies_wait_behind_a_deferred_one),
        NSRV_FIXTURE_TEST(test_close_orphans_a_waiting_slot),
        NSRV_FIXTURE_TEST(test_bad_length_closes),
        NSRV_FIXTURE_TEST(test_undecodable_request_closes_with_the_runners_reason),
        NSRV_FIXTURE_TEST(test_big_frame_goes_to_a_worker_and_order_holds),
        NSRV_FIXTURE_TEST(test_costly_body_is_copied_to_a_worker),
        NSRV_FIXTURE_TEST(test_close_during_a_job),
        NSRV_FIXTURE_TEST(test_idle_connection_is_closed),
        NSRV_FIXTURE_TEST(test_idle_limit_zero_never_closes),
        NSRV_FIXTURE_TEST(test_stuck_reader_is_reset_a_slow_one_is_not),
        NSRV_FIXTURE_TEST(test_shutdown_closes_a_served_connection_once_drained),
        NSRV_FIXTURE_TEST(test_shutdown_waits_for_a_partial_request_and_a_slot),
        NSRV_FIXTURE_TEST(test_shutdown_unserved_connection_waits_for_the_grace),
        NSRV_FIXTURE_TEST(test_tls_records_in_and_out),
        NSRV_FIXTURE_TEST(test_tls_partial_record_is_a_request_in_flight),
        NSRV_FIXTURE_TEST(test_tls_close_notify_closes_after_the_requests_before_it),
        NSRV_FIXTURE_TEST(test_tls_garbage_fails_the_handshake),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
