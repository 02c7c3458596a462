/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Levelled logging to stderr with UTC ISO-8601 millisecond timestamps.
 * The level check happens before the arguments are evaluated.
 *
 * Messages carry names that came from outside (topics, keys, peer text), so a
 * line is always one line of valid UTF-8: control characters are escaped and
 * ill-formed bytes replaced (nsrv_log_escape), and a long message is cut
 * between characters, never inside one.
 */
#pragma once

#include <stdarg.h>
#include <stddef.h>

typedef enum {
    NSRV_LOG_ERROR = 0,
    NSRV_LOG_WARN = 1,
    NSRV_LOG_NOTICE = 2, /* default */
    NSRV_LOG_INFO = 3,
    NSRV_LOG_DEBUG = 4,
} nsrv_log_level_t;

extern int nsrv_log_level;

/* Parses "error|warn|notice|info|debug"; returns -1 if unknown. */
int nsrv_log_level_parse(const char *s);

/*
 * Writes src[0..len) into dst[0..cap) as log text: C0 controls and DEL become
 * \n, \r, \t or \xNN, C1 controls \u0080-\u009f, each ill-formed UTF-8 subpart
 * U+FFFD; stops before a character (or its escape) that would not fit.
 * Returns the bytes written (no NUL is added).
 */
size_t nsrv_log_escape(char *dst, size_t cap, const char *src, size_t len);
void nsrv_log_write(int level, const char *group, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define nsrv_log(level, group, ...)                                                                \
    do {                                                                                           \
        if ((level) <= nsrv_log_level)                                                             \
            nsrv_log_write((level), (group), __VA_ARGS__);                                         \
    } while (0)
#define nsrv_log_error(g, ...) nsrv_log(NSRV_LOG_ERROR, g, __VA_ARGS__)
#define nsrv_log_warn(g, ...) nsrv_log(NSRV_LOG_WARN, g, __VA_ARGS__)
#define nsrv_log_notice(g, ...) nsrv_log(NSRV_LOG_NOTICE, g, __VA_ARGS__)
#define nsrv_log_info(g, ...) nsrv_log(NSRV_LOG_INFO, g, __VA_ARGS__)
#define nsrv_log_debug(g, ...) nsrv_log(NSRV_LOG_DEBUG, g, __VA_ARGS__)
