/* SPDX-License-Identifier: Apache-2.0 */
/* Levelled logging to stderr: "2026-12-02T11:06:04.123Z NOTICE [SERVER] message". */
#include "nsrv/log.h"

#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "nsrv/utf8.h"

int nsrv_log_level = NSRV_LOG_NOTICE;

static const char *const level_names[] = {"ERROR", "WARN", "NOTICE", "INFO", "DEBUG"};

int nsrv_log_level_parse(const char *s) {
    for (int i = 0; i < 5; i++) {
        if (strcasecmp(s, level_names[i]) == 0)
            return i;
    }
    return -1;
}

/* The escape of one code point that must not reach a log line raw, or 0 bytes. */
static size_t control_escape(uint32_t cp, char esc[8]) {
    static const char hex[] = "0123456789abcdef";
    if (cp == '\n' || cp == '\r' || cp == '\t') {
        esc[0] = '\\';
        esc[1] = cp == '\n' ? 'n' : cp == '\r' ? 'r' : 't';
        return 2;
    }
    if (cp < 0x20 || cp == 0x7f) {
        memcpy(esc, "\\x", 2);
        esc[2] = hex[cp >> 4];
        esc[3] = hex[cp & 15];
        return 4;
    }
    if (cp >= 0x80 && cp <= 0x9f) { /* C1: some terminals act on U+009B (CSI) */
        memcpy(esc, "\\u00", 4);
        esc[4] = hex[cp >> 4];
        esc[5] = hex[cp & 15];
        return 6;
    }
    return 0;
}

size_t nsrv_log_escape(char *dst, size_t cap, const char *src, size_t len) {
    const unsigned char *p = (const unsigned char *)src;
    size_t in = 0, out = 0;
    while (in < len) {
        uint32_t cp = 0;
        size_t bad = 0;
        size_t n = nsrv_utf8_next(p + in, len - in, &cp, &bad);
        char esc[8];
        const char *piece;
        size_t piece_len;
        if (n == 0) {
            piece = NSRV_UTF8_REPLACEMENT;
            piece_len = sizeof NSRV_UTF8_REPLACEMENT - 1;
        } else if ((piece_len = control_escape(cp, esc)) != 0) {
            piece = esc;
        } else {
            piece = src + in;
            piece_len = n;
        }
        if (out + piece_len > cap)
            break;
        memcpy(dst + out, piece, piece_len);
        out += piece_len;
        in += n ? n : bad;
    }
    return out;
}

void nsrv_log_write(int level, const char *group, const char *fmt, ...) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char line[2048];
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %d %-6s [%s] ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     (long)(tv.tv_usec / 1000), (int)getpid(),
                     level_names[level < 0   ? 0
                                 : level > 4 ? 4
                                             : level],
                     group);
    if (n < 0 || (size_t)n >= sizeof line - 1)
        return;
    /* Twice the line: every byte escapes to at least one, so the line fills up before the
     * point where vsnprintf may have cut a character in two. */
    char msg[2 * sizeof line];
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    size_t msg_len = (size_t)m < sizeof msg ? (size_t)m : sizeof msg - 1;
    size_t len = (size_t)n + nsrv_log_escape(line + n, sizeof line - 1 - (size_t)n, msg, msg_len);
    line[len++] = '\n';
    fwrite(line, 1, len, stderr);
}
