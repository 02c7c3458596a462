/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The local incarnation, persisted so that it rises across restarts even
 * when the wall clock does not (proto/gossip.md §9.3; memberlist #311 is the
 * bug this avoids). Blocking; startup only.
 */
#include "nsrv/gossip.h"

#include <stdio.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/fileio.h"
#include "nsrv/text.h"

/* "18446744073709551615\n" fits; anything longer is not our file. */
#define INC_FILE_MAX 64

static int parse_inc(const char *s, size_t len, uint64_t *out) {
    size_t e = len;
    while (e > 0 && (s[e - 1] == '\n' || s[e - 1] == '\r' || s[e - 1] == ' '))
        e--;
    /* At most 19 digits: the longest text nsrvd writes for a value <= NSRV_GOSSIP_TIME_MAX. */
    if (e > 19 || !nsrv_parse_uint(s, e, NSRV_GOSSIP_TIME_MAX, out))
        return -EINVAL;
    return 0;
}

int nsrv_gossip_incarnation_next(const char *path, int64_t now_wall_ms, uint64_t *inc) {
    char *text = NULL;
    size_t len = 0;
    uint64_t stored = 0;
    int rc = nsrv_file_read_all(path, INC_FILE_MAX, &text, &len);
    if (rc == 0) {
        rc = parse_inc(text, len, &stored);
        nsrv_free(text);
        if (rc != 0)
            return rc;
    } else if (rc == -EFBIG) {
        return -EINVAL;
    } else if (rc != -ENOENT) {
        return rc;
    }
    uint64_t now = now_wall_ms > 0 ? (uint64_t)now_wall_ms : 0;
    uint64_t next = NSRV_MAX(stored + 1, now);
    if (next > NSRV_GOSSIP_TIME_MAX)
        return -EINVAL;
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%llu\n", (unsigned long long)next);
    rc = nsrv_file_write_atomic(path, buf, (size_t)n, false);
    if (rc != 0)
        return rc;
    *inc = next;
    return 0;
}
