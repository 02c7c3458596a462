/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `nsrvd keygen -o FILE -n NODE_ID [-k KEY_ID]`: a node's gossip key pair. stdout carries
 * exactly one ID:KEYID:PUBLIC item, so that `item=$(nsrvd keygen ...)` captures what every
 * node's gossipPeerKeys lists; everything meant for a person goes to stderr.
 */
#include "nsrv/keygen_cli.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsrv/alloc.h"
#include "nsrv/fileio.h"
#include "nsrv/seal.h"
#include "nsrv/text.h"

void nsrv_keygen_cli_usage(FILE *f) {
    fputs(
        "usage: nsrvd keygen -o SECRET_KEY_FILE -n NODE_ID [-k KEY_ID]\n"
        "  Makes a node's gossip key pair: writes the secret key to SECRET_KEY_FILE (mode\n"
        "  0600; an existing file is never replaced) and prints the public key on stdout as\n"
        "  one NODE_ID:KEY_ID:PUBLIC_KEY item. Every node's gossipPeerKeys lists the items of\n"
        "  all nodes, joined with commas.\n"
        "  -o FILE     the secret key file, the node's gossipSecretKeyFile\n"
        "  -n NODE_ID  the node's gossipNodeId, 1..254\n"
        "  -k KEY_ID   the key's id, 1..255 (default 1; its gossipKeyId, a new one per rotation)\n"
        "  Run as root, keygen gives a key made in a directory that another user owns to that\n"
        "  user and its group (the package's /var/lib/nsrvd: the nsrvd user, which the service\n"
        "  runs as).\n"
        "example, three nodes on one host:\n"
        "  mkdir -p n1 n2 n3\n"
        "  k1=$(nsrvd keygen -o n1/gossip.key -n 1)\n"
        "  k2=$(nsrvd keygen -o n2/gossip.key -n 2)\n"
        "  k3=$(nsrvd keygen -o n3/gossip.key -n 3)\n"
        "  echo \"gossipPeerKeys=$k1,$k2,$k3\"   # the same line in all three configurations\n",
        f);
}

int nsrv_keygen_cli(int argc, char **argv) {
    const char *out = NULL;
    uint64_t node = 0, key_id = 1;
    bool ok = true;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            nsrv_keygen_cli_usage(stdout);
            return 0;
        }
    }
    for (int i = 0; ok && i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            ok = false;
        else if (!strcmp(argv[i], "-o")) {
            out = v;
            ok = v[0] != '\0';
        } else if (!strcmp(argv[i], "-n"))
            ok = nsrv_parse_uint(v, strlen(v), 254, &node);
        else if (!strcmp(argv[i], "-k"))
            ok = nsrv_parse_uint(v, strlen(v), 255, &key_id);
        else
            ok = false;
    }
    if (!ok || !out || node < 1 || key_id < 1) {
        nsrv_keygen_cli_usage(stderr);
        return 1;
    }

    /* A key root makes in a service account's directory is that account's: the packaged
     * service runs as nsrvd and could not read a root-owned key in /var/lib/nsrvd. */
    char *dir = nsrv_file_dir_of(out);
    uid_t owner = (uid_t)-1;
    gid_t group = (gid_t)-1;
    struct stat dst;
    if (geteuid() == 0 && stat(dir, &dst) == 0 && S_ISDIR(dst.st_mode) && dst.st_uid != 0) {
        owner = dst.st_uid;
        group = dst.st_gid;
    }

    char line[NSRV_SEAL_LINE_MAX];
    int rc = nsrv_seal_keygen_files(out, (uint8_t)node, (uint8_t)key_id, owner, group, line,
                                    sizeof line);
    if (rc != 0) {
        fprintf(stderr, "nsrvd keygen: %s: %s%s\n", out, strerror(-rc),
                rc == -EEXIST ? " (keygen never replaces a key; remove it first, or use another "
                                "file and a new -k for a rotation)"
                              : "");
        nsrv_free(dir);
        return 1;
    }
    printf("%s\n", line);
    fflush(stdout);

    char abs[PATH_MAX], user[64], grp[64];
    const char *shown = realpath(out, abs) ? abs : out;
    struct stat st;
    if (stat(out, &st) != 0) {
        st.st_uid = geteuid();
        st.st_gid = getegid();
    }
    nsrv_file_owner_names(st.st_uid, st.st_gid, user, sizeof user, grp, sizeof grp);
    fprintf(stderr,
            "nsrvd keygen: wrote node %u's secret key to %s (mode 0600, owner %s:%s%s%s)\n"
            "  this node's configuration: gossipNodeId=%u gossipKeyId=%u "
            "gossipSecretKeyFile=%s\n"
            "  every node's gossipPeerKeys: the %u:%u:... item printed on stdout, joined with "
            "the other nodes' items by commas\n",
            (unsigned)node, shown, user, grp, owner != (uid_t)-1 ? ", the owner of " : "",
            owner != (uid_t)-1 ? dir : "", (unsigned)node, (unsigned)key_id, shown, (unsigned)node,
            (unsigned)key_id);
    nsrv_free(dir);
    return 0;
}
