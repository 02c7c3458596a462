/* SPDX-License-Identifier: Apache-2.0 */
/* Request-line parser of the status endpoint (include/nsrv/http.h). */
#include "nsrv/http.h"

#include <errno.h>
#include <string.h>

#include "nsrv/common.h"

static const char *find_header_end(const char *buf, size_t len) {
    for (size_t i = 0; i + 1 < len; i++) {
        if (buf[i] == '\n' && buf[i + 1] == '\n')
            return buf + i + 2;
        if (i + 3 < len && memcmp(buf + i, "\r\n\r\n", 4) == 0)
            return buf + i + 4;
    }
    return NULL;
}

static bool is_token_char(char c) {
    return c >= 'A' && c <= 'Z';
}

/* Visible ASCII only: a path is echoed into logs and matched literally. */
static bool is_path_char(char c) {
    return c > 0x20 && c < 0x7F;
}

int nsrv_http_parse_request(const char *buf, size_t len, nsrv_http_req_t *out) {
    size_t scan = len < NSRV_HTTP_MAX_REQUEST ? len : NSRV_HTTP_MAX_REQUEST;
    if (!find_header_end(buf, scan))
        return len >= NSRV_HTTP_MAX_REQUEST ? NSRV_ETOOBIG : NSRV_AGAIN;
    /* "METHOD SP PATH SP HTTP/1.x" */
    size_t i = 0;
    while (i < scan && is_token_char(buf[i]))
        i++;
    if (i == 0 || i > 16 || i >= scan || buf[i] != ' ')
        return -EPROTO;
    size_t method_len = i++;
    size_t path_start = i;
    while (i < scan && is_path_char(buf[i]))
        i++;
    if (i == path_start || i >= scan || buf[i] != ' ' || buf[path_start] != '/')
        return -EPROTO;
    size_t path_end = i++;
    if (scan - i < 8 || memcmp(buf + i, "HTTP/1.", 7) != 0 ||
        (buf[i + 7] != '0' && buf[i + 7] != '1'))
        return -EPROTO;
    i += 8;
    if (i < scan && buf[i] == '\r')
        i++;
    if (i >= scan || buf[i] != '\n')
        return -EPROTO;
    const char *q = memchr(buf + path_start, '?', path_end - path_start);
    out->method = buf;
    out->method_len = method_len;
    out->path = buf + path_start;
    out->path_len = (q ? (size_t)(q - buf) : path_end) - path_start;
    return 0;
}
