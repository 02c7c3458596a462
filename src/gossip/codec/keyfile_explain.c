/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Why a node cannot use its secret key file, said so that an operator can fix it without
 * reading the source: the packaged service runs as its own user, and a key made by root per
 * habit is the commonest way to get here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsrv/fileio.h"
#include "nsrv/seal.h"

void nsrv_seal_sk_load_explain(const char *path, int rc, unsigned node_id, char *err,
                               size_t errlen) {
    char me[64], my_group[64];
    uid_t uid = geteuid();
    nsrv_file_owner_names(uid, getegid(), me, sizeof me, my_group, sizeof my_group);
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
        nsrv_file_owner_names(st.st_uid, st.st_gid, owner, sizeof owner, group, sizeof group);
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
