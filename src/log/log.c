/* SPDX-License-Identifier: Apache-2.0 */
/* Levelled logging to stderr: "2026-12-02T11:06:04.123Z NOTICE [SERVER] message". */
#include "nsrv/log.h"

#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int nsrv_log_level = NSRV_LOG_NOTICE;

static const char *const level_names[] = {"ERROR", "WARN", "NOTICE", "INFO", "DEBUG"};

int nsrv_log_level_parse(const char *s) {
    for (int i = 0; i < 5; i++) {
        if (strcasecmp(s, level_names[i]) == 0)
            return i;
    }
    return -1;
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
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line - 1)
        n = sizeof line - 2;
    line[n++] = '\n';
    fwrite(line, 1, (size_t)n, stderr);
}
