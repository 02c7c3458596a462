/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Topics with byte-identical routes share one cached body (route_body_intern.h):
 * the sharing, un-sharing on a change, buffers a connection still holds, the
 * table's size under churn, and the probe table's deletions under collisions.
 */
#include "route_test.h"
#include "testlib.h"

#define C "DefaultCluster"
#define T0 RT_T0

/* The cached body of topic in default mode, with its shared buffer. */
static nsrv_rcbuf_t *body_of(nsrv_route_t *rt, const char *topic) {
    const char *body = NULL;
    size_t len = 0;
    nsrv_rcbuf_t *shared = NULL;
    assert_int_equal(nsrv_route_topic_route_shared(rt, topic, NSRV_ROUTE_JSON_DEFAULT, NULL, NULL,
                                                   T0, &body, &len, &shared),
                     0);
    assert_non_null(shared);
    assert_ptr_equal(body, shared->data);
    return shared;
}

static void set_queues(nsrv_route_t *rt, const char *topic, int32_t queues) {
    nsrv_queue_data_t qd = {"broker-a", queues, queues, 6, 0};
    nsrv_route_register_topic(rt, topic, &qd, 1);
}

static size_t n_bodies(const nsrv_route_t *rt) {
    nsrv_route_sizes_t sz;
    nsrv_route_sizes(rt, &sz);
    return sz.route_bodies;
}

static void one_broker(nsrv_route_t *rt) {
    rt_reg_t r;
    rt_reg_two(&r, C, "a:1", "broker-a", 0, "T1", "T2");
    rt_reg_topic(&r, "T3", 8, 8, 6, 0);
    rt_reg_do(rt, &r, T0);
}

static void test_equal_routes_share_one_buffer(void **state) {
    rt_fix_t *f = *state;
    one_broker(f->rt);
    nsrv_rcbuf_t *b1 = body_of(f->rt, "T1"), *b2 = body_of(f->rt, "T2"), *b3 = body_of(f->rt, "T3");
    assert_ptr_equal(b1, b2);
    assert_ptr_not_equal(b1, b3);
    assert_int_equal(n_bodies(f->rt), 2);
    nsrv_route_stats_t st;
    nsrv_route_get_stats(f->rt, &st);
    assert_int_equal(st.route_cache_builds, 3);
    assert_int_equal(st.route_body_shares, 1);
    /* Cache hits keep the buffer; the standard mode of the same route is other bytes. */
    assert_ptr_equal(body_of(f->rt, "T1"), b1);
    const char *body;
    size_t len;
    assert_int_equal(
        nsrv_route_topic_route(f->rt, "T1", NSRV_ROUTE_JSON_STANDARD, NULL, NULL, T0, &body, &len),
        0);
    assert_int_equal(n_bodies(f->rt), 3);
}

static void test_change_unshares_and_keeps_the_others_bytes(void **state) {
    rt_fix_t *f = *state;
    one_broker(f->rt);
    nsrv_buf_t before = NSRV_BUF_INIT;
    nsrv_rcbuf_t *shared = body_of(f->rt, "T1");
    assert_ptr_equal(body_of(f->rt, "T2"), shared);
    nsrv_buf_append(&before, shared->data, shared->len);

    set_queues(f->rt, "T2", 16);
    rt_assert_ok(f->rt, T0);
    nsrv_rcbuf_t *t2 = body_of(f->rt, "T2");
    assert_ptr_not_equal(t2, shared);
    assert_true(rt_contains(t2->data, "\"readQueueNums\":16"));
    /* T1 kept its buffer and its bytes. */
    assert_ptr_equal(body_of(f->rt, "T1"), shared);
    assert_int_equal(shared->len, before.len);
    assert_memory_equal(shared->data, before.data, before.len);
    assert_int_equal(n_bodies(f->rt), 2); /* T1's and T2's (16 queues); T3 was never queried */

    /* Back to T1's queues: shared again, and the 16-queue body had no other user. */
    set_queues(f->rt, "T2", 4);
    assert_ptr_equal(body_of(f->rt, "T2"), shared);
    assert_int_equal(n_bodies(f->rt), 1);
    assert_string_equal(rt_route(f->rt, "T2", NSRV_ROUTE_JSON_DEFAULT, T0, &f->b), before.data);
    nsrv_buf_deinit(&before);
}

/* A connection still sending a body keeps its bytes; the table lets go of it with the last
 * holder, and a table destroyed first leaves the connection a plain buffer. */
static void test_body_held_by_a_connection(void **state) {
    rt_fix_t *f = *state;
    one_broker(f->rt);
    nsrv_rcbuf_t *sending = nsrv_rcbuf_ref(body_of(f->rt, "T3"));
    nsrv_buf_t *copy = &f->b;
    nsrv_buf_append(copy, sending->data, sending->len);
    nsrv_route_delete_topic(f->rt, "T3", NULL);
    rt_assert_ok(f->rt, T0);
    assert_int_equal(n_bodies(f->rt), 1); /* no topic uses it, the connection does */
    assert_memory_equal(sending->data, copy->data, copy->len);
    nsrv_rcbuf_unref(sending);
    assert_int_equal(n_bodies(f->rt), 0);

    sending = nsrv_rcbuf_ref(body_of(f->rt, "T1"));
    nsrv_route_destroy(&f->rt);
    assert_null(sending->pool);
    assert_int_equal(sending->refs, 1);
    nsrv_rcbuf_unref(sending);
}

/* Topics come, change and go: the table holds exactly the distinct bodies in use. */
static void test_size_bounded_under_churn(void **state) {
    rt_fix_t *f = *state;
    one_broker(f->rt);
    char name[32];
    size_t max_cap = 0;
    for (int round = 0; round < 2000; round++) {
        snprintf(name, sizeof name, "churn-%d", round % 50);
        set_queues(f->rt, name, 1 + round % 37);
        body_of(f->rt, name);
        if (round % 3 == 0) {
            snprintf(name, sizeof name, "churn-%d", (round * 7) % 50);
            nsrv_route_delete_topic(f->rt, name, NULL);
        }
        /* At most 50 churn topics and T1..T3, so at most 53 distinct bodies. */
        assert_true(n_bodies(f->rt) <= 53);
        if (f->rt->bodies.cap > max_cap)
            max_cap = f->rt->bodies.cap;
        if (round % 97 == 0)
            rt_assert_ok(f->rt, T0);
    }
    assert_true(max_cap <= 256);
    rt_assert_ok(f->rt, T0);
    for (int i = 0; i < 50; i++) {
        snprintf(name, sizeof name, "churn-%d", i);
        nsrv_route_delete_topic(f->rt, name, NULL);
    }
    nsrv_route_delete_topic(f->rt, "T1", NULL);
    nsrv_route_delete_topic(f->rt, "T2", NULL);
    nsrv_route_delete_topic(f->rt, "T3", NULL);
    assert_int_equal(n_bodies(f->rt), 0);
    assert_int_equal(f->rt->bodies.cap, 0);
}

/* The probe table alone: random inserts and releases of few-byte bodies (many share a home
 * slot), with the invariants after each; a deletion that broke a probe path fails the check. */
static void test_table_under_collisions(void **state) {
    (void)state;
    rt_body_intern_t bi;
    nsrv__body_intern_init(&bi);
    nsrv_rcbuf_t *held[64] = {0};
    uint32_t rnd = 12345;
    char why[256] = "";
    for (int step = 0; step < 20000; step++) {
        rnd = rnd * 1103515245u + 12345u;
        size_t k = (rnd >> 8) % 64;
        if (held[k]) {
            nsrv_rcbuf_unref(held[k]);
            held[k] = NULL;
        } else {
            char bytes[8];
            int len = snprintf(bytes, sizeof bytes, "b%zu", k);
            held[k] = nsrv__body_intern(&bi, bytes, (size_t)len);
            assert_int_equal(held[k]->refs, 2);
        }
        int rc = nsrv__body_intern_check(&bi, why, sizeof why);
        if (rc)
            fail_msg("step %d: %s", step, why);
        size_t n = 0;
        for (size_t i = 0; i < 64; i++)
            n += held[i] != NULL;
        assert_int_equal(bi.n, n);
    }
    for (size_t i = 0; i < 64; i++)
        nsrv_rcbuf_unref(held[i]);
    assert_int_equal(bi.n, 0);
    nsrv__body_intern_deinit(&bi);
}

NSRV_TEST_MAIN(NULL, NULL, RT_TEST(test_equal_routes_share_one_buffer),
               RT_TEST(test_change_unshares_and_keeps_the_others_bytes),
               RT_TEST(test_body_held_by_a_connection), RT_TEST(test_size_bounded_under_churn),
               cmocka_unit_test(test_table_under_collisions))
