/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Levelled logging to stderr with UTC ISO-8601 millisecond timestamps.
 * The level check happens before the arguments are evaluated.
 */
#pragma once

#include <stdarg.h>

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
