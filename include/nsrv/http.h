/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The request-line parser of the tiny HTTP/1.x status endpoint. Pure: no I/O.
 * Only what a status endpoint needs: method, path, and the end of the header
 * block; no bodies, no keep-alive. Untrusted input; fuzzed by
 * src/server/fuzz/fuzz_http.c.
 */
#pragma once

#include <stddef.h>

/* Requests larger than this (request line plus headers) are refused. */
#define NSRV_HTTP_MAX_REQUEST 8192

typedef struct {
    const char *method; /* borrowed from the input, not NUL-terminated */
    size_t method_len;
    const char *path; /* without the query string */
    size_t path_len;
} nsrv_http_req_t;

/*
 * Parses buf[0..len), the bytes received so far. Returns 0 once the whole
 * header block ("\r\n\r\n", or "\n\n") is in and the request line is valid;
 * NSRV_AGAIN when more bytes are needed; NSRV_ETOOBIG past
 * NSRV_HTTP_MAX_REQUEST; -EPROTO for a malformed request line.
 */
int nsrv_http_parse_request(const char *buf, size_t len, nsrv_http_req_t *out);
