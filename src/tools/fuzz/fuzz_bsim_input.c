/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for what nsrv-brokersim reads from outside: stdin command
 * lines (parsed, formatted and parsed again to the same command), the
 * nameserver list syntax, and a response byte stream split into frames by
 * nsrv_bsim_rx_t in input-chosen chunk sizes (every byte fed is either
 * handed out in a frame or still buffered, and the buffer stays bounded).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/remoting.h"
#include "bsim_int.h"
#include "fuzz_check.h"

/* A small cap so the corpus reaches the oversize-prefix path cheaply. */
#define FUZZ_MAX_FRAME 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    size_t bytes;
    nsrv_arena_t arena;
} sink_t;

static int sink_cb(void *ctx, const uint8_t *frame, size_t len) {
    sink_t *s = ctx;
    FUZZ_CHECK(len >= 8 && len <= FUZZ_MAX_FRAME);
    s->bytes += len;
    nsrv_cmd_t c;
    int rc = nsrv_cmd_decode(frame, len, &s->arena, &c);
    FUZZ_CHECK(rc == 0 || rc == NSRV_EFRAME || rc == NSRV_EHEADER || rc == NSRV_ESERTYPE);
    nsrv_arena_reset(&s->arena);
    return 0;
}

static void fuzz_lines(const uint8_t *data, size_t size) {
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i < size && data[i] != '\n')
            continue;
        nsrv_bsim_cmd_t c, again;
        char err[200], text[200];
        if (nsrv__bsim_cmd_parse((const char *)data + start, i - start, &c, err, sizeof(err)) ==
                0 &&
            c.verb != NSRV_BSIM_CMD_NONE) {
            nsrv__bsim_cmd_format(&c, text, sizeof(text));
            FUZZ_CHECK(nsrv__bsim_cmd_parse(text, strlen(text), &again, err, sizeof(err)) == 0);
            FUZZ_CHECK(memcmp(&c, &again, sizeof(c)) == 0);
        }
        start = i + 1;
    }
}

static void fuzz_nodes(const uint8_t *data, size_t size) {
    static nsrv_bsim_opts_t o;
    char *s = nsrv_strndup((const char *)data, size); /* stops at an embedded NUL */
    char err[200];
    nsrv__bsim_opts_defaults(&o);
    if (nsrv__bsim_opts_parse_nodes(&o, s, err, sizeof(err)) == 0) {
        FUZZ_CHECK(o.n_nodes >= 1 && o.n_nodes <= NSRV_BSIM_MAX_NODES);
        for (size_t i = 0; i < o.n_nodes; i++)
            FUZZ_CHECK(o.nodes[i].port >= 1 && o.nodes[i].port <= 65535);
    }
    nsrv_free(s);
}

static void fuzz_stream(const uint8_t *data, size_t size) {
    if (size == 0)
        return;
    size_t chunk = (size_t)data[0] % 64 + 1;
    sink_t s = {0};
    nsrv_arena_init(&s.arena, 4096);
    nsrv_bsim_rx_t rx;
    nsrv__bsim_rx_init(&rx, FUZZ_MAX_FRAME);
    size_t fed = 0;
    for (size_t off = 1; off < size; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        int rc = nsrv__bsim_rx_feed(&rx, data + off, n, sink_cb, &s);
        if (rc < 0) {
            FUZZ_CHECK(rc == NSRV_EFRAME);
            break;
        }
        fed += n;
        FUZZ_CHECK(s.bytes + rx.len == fed);
        FUZZ_CHECK(rx.len < FUZZ_MAX_FRAME + chunk);
    }
    nsrv__bsim_rx_deinit(&rx);
    nsrv_arena_deinit(&s.arena);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_lines(data, size);
    fuzz_nodes(data, size);
    fuzz_stream(data, size);
    return 0;
}
