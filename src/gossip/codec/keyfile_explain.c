/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Why a node cannot use its secret key file, said so that an operator can fix it without
 * reading the source: the packaged service runs as its own user, and a key made by root per
 * habit is the commonest way to get here.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsrv/seal.h"

static void user_name(uid_t uid, char *out, size_t cap) {
    const struct passwd *pw = getpwuid(uid);
    if (pw && pw->pw_name)
        snprintf(out, cap, "%s", pw->pw_name);
    else
        snprintf(out, cap, "%u", (unsigned)uid);
}

static void group_name(gid_t gid, char *out, size_t cap) {
    const struct group *gr = getgrgid(gid);
    if (gr && gr->gr_name)
        snprintf(out, cap, "%s", gr->gr_name);
    else
        snprintf(out, cap, "%u", (unsigned)gid);
}

void nsrv_seal_sk_load_explain(const char *path, int rc, unsigned node_id, char *err,
                               size_t errlen) {
    char me[64];
    uid_t uid = geteuid();
    user_name(uid, me, sizeof me);
    struct stat st;
    switch (rc) {
    case -EACCES:
        if (stat(path, &st) != 0) {
            snprintf(err, errlen,
                     "gossipSecretKeyFile '%s': permission denied: nsrvd runs as user %s "
                     "(uid %u), which cannot reach the file; fix: keep the key in a directory "
                     "that user can enter, e.g. its data directory",
                     path, me, (unsigned)uid);
            return;
        }
        char owner[64], group[64];
        user_name(st.st_uid, owner, sizeof owner);
        group_name(st.st_gid, group, sizeof group);
        snprintf(err, errlen,
                 "gossipSecretKeyFile '%s': permission denied: nsrvd runs as user %s (uid %u) "
                 "and the file belongs to %s:%s (mode %04o); fix: chown %s: '%s' (keep mode "
                 "0600), or make a new key with nsrvd keygen as user %s, or as root in a "
                 "directory %s owns",
                 path, me, (unsigned)uid, owner, group, (unsigned)(st.st_mode & 07777), me, path,
                 me, me);
        return;
    case -EPERM:
        if (stat(path, &st) == 0) {
            snprintf(err, errlen,
                     "gossipSecretKeyFile '%s': mode %04o lets group or others read a secret "
                     "key; fix: chmod 600 '%s'",
                     path, (unsigned)(st.st_mode & 07777), path);
            return;
        }
        break;
    case -ENOENT:
        snprintf(err, errlen,
                 "gossipSecretKeyFile '%s' does not exist; fix: nsrvd keygen -o '%s' -n %u (as "
                 "user %s, which nsrvd runs as) and put the ID:KEYID:PUBLIC item it prints in "
                 "every node's gossipPeerKeys",
                 path, path, node_id, me);
        return;
    case -EINVAL:
        snprintf(err, errlen,
                 "gossipSecretKeyFile '%s' is not a key file: it must be a regular file holding "
                 "the one base64 line nsrvd keygen writes",
                 path);
        return;
    default:
        break;
    }
    snprintf(err, errlen, "gossipSecretKeyFile '%s': %s", path, strerror(-rc));
}
