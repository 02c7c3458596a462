/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parser of the simulator's stdin control lines, e.g. "die broker-0003",
 * "cut broker-0001/1 0", "stats". Operator input: every word is checked
 * and a bad line yields an error text for the "err <reason>" reply. Pure.
 */
#include <errno.h>
#include <string.h>

#include "nsrv/text.h"
#include "bsim_int.h"

typedef struct {
    const char *word;
    nsrv_bsim_verb_t verb;
    bool has_target;
    bool has_node;
} verb_def_t;

static const verb_def_t VERBS[] = {
    {"stop", NSRV_BSIM_CMD_STOP, true, false},          {"die", NSRV_BSIM_CMD_DIE, true, false},
    {"freeze", NSRV_BSIM_CMD_FREEZE, true, false},      {"cut", NSRV_BSIM_CMD_CUT, true, true},
    {"cut-close", NSRV_BSIM_CMD_CUT_CLOSE, true, true}, {"heal", NSRV_BSIM_CMD_HEAL, true, true},
    {"resume", NSRV_BSIM_CMD_RESUME, true, false},      {"bump", NSRV_BSIM_CMD_BUMP, true, false},
    {"stats", NSRV_BSIM_CMD_STATS, false, false},       {"list", NSRV_BSIM_CMD_LIST, false, false},
    {"quit", NSRV_BSIM_CMD_QUIT, false, false},
};

/* A bound on node indexes that keeps the value far from overflow; the
 * simulator checks it against its real node count. */
#define NODE_INDEX_MAX 1000000

/* Non-negative decimal below `max` from s[0..len); -1 if not one. */
static int32_t parse_index(const char *s, size_t len, int32_t max) {
    uint64_t v;
    return nsrv_parse_uint(s, len, (uint64_t)max, &v) ? (int32_t)v : -1;
}

int nsrv__bsim_cmd_parse(const char *line, size_t len, nsrv_bsim_cmd_t *out, char *err,
                         size_t err_len) {
    /* Up to four words; a fourth one is always an error. */
    const char *w[4];
    size_t wl[4];
    size_t nw = 0;
    size_t i = 0;
    while (i < len) {
        while (i < len && nsrv_is_space(line[i]))
            i++;
        if (i == len)
            break;
        if (line[i] == '\0')
            return nsrv_fail(err, err_len, -EINVAL, "NUL byte in command");
        size_t start = i;
        while (i < len && !nsrv_is_space(line[i]) && line[i] != '\0')
            i++;
        if (nw == NSRV_ARRAY_LEN(w))
            return nsrv_fail(err, err_len, -EINVAL, "too many words");
        w[nw] = line + start;
        wl[nw] = i - start;
        nw++;
    }
    nsrv_bsim_cmd_t c;
    memset(&c, 0, sizeof(c));
    c.member_id = -1;
    c.node = -1;
    if (nw == 0 || w[0][0] == '#') {
        c.verb = NSRV_BSIM_CMD_NONE;
        *out = c;
        return 0;
    }
    const verb_def_t *d = NULL;
    for (size_t k = 0; k < NSRV_ARRAY_LEN(VERBS); k++)
        if (strlen(VERBS[k].word) == wl[0] && memcmp(VERBS[k].word, w[0], wl[0]) == 0)
            d = &VERBS[k];
    if (!d)
        return nsrv_fail(err, err_len, -EINVAL,
                         "unknown command '%.*s' (stop, die, freeze, resume, bump, cut, cut-close, "
                         "heal, stats, list, quit)",
                         (int)NSRV_MIN(wl[0], (size_t)64), w[0]);
    size_t want = 1 + (d->has_target ? 1 : 0) + (d->has_node ? 1 : 0);
    if (nw != want)
        return nsrv_fail(err, err_len, -EINVAL, "%s: want %s", d->word,
                         d->has_node     ? "<broker>[/<id>]|all <node-index>"
                         : d->has_target ? "<broker>[/<id>]|all"
                                         : "no arguments");
    c.verb = d->verb;
    if (d->has_target) {
        const char *t = w[1];
        size_t tl = wl[1];
        const char *slash = memchr(t, '/', tl);
        size_t name_len = slash ? (size_t)(slash - t) : tl;
        if (!nsrv__bsim_name_ok(t, name_len))
            return nsrv_fail(err, err_len, -EINVAL, "bad broker name '%.*s'",
                             (int)NSRV_MIN(tl, (size_t)64), t);
        if (slash) {
            c.member_id = parse_index(slash + 1, tl - name_len - 1, NSRV_BSIM_MAX_SLAVES);
            if (c.member_id < 0 || (name_len == 3 && memcmp(t, "all", 3) == 0))
                return nsrv_fail(err, err_len, -EINVAL, "bad broker id in '%.*s'",
                                 (int)NSRV_MIN(tl, (size_t)64), t);
        }
        memcpy(c.target, t, name_len);
        c.target[name_len] = '\0';
    }
    if (d->has_node) {
        c.node = parse_index(w[2], wl[2], NODE_INDEX_MAX);
        if (c.node < 0)
            return nsrv_fail(err, err_len, -EINVAL, "bad node index '%.*s'",
                             (int)NSRV_MIN(wl[2], (size_t)16), w[2]);
    }
    *out = c;
    return 0;
}

void nsrv__bsim_cmd_format(const nsrv_bsim_cmd_t *cmd, char *out, size_t len) {
    const char *word = "none";
    for (size_t k = 0; k < NSRV_ARRAY_LEN(VERBS); k++)
        if (VERBS[k].verb == cmd->verb)
            word = VERBS[k].word;
    int n = snprintf(out, len, "%s", word);
    if (cmd->target[0] && n >= 0 && (size_t)n < len)
        n += snprintf(out + n, len - (size_t)n, " %s", cmd->target);
    if (cmd->member_id >= 0 && n >= 0 && (size_t)n < len)
        n += snprintf(out + n, len - (size_t)n, "/%d", (int)cmd->member_id);
    if (cmd->node >= 0 && n >= 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, " %d", (int)cmd->node);
}
