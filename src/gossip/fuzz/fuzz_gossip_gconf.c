/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target for gossipPeers / gossipPeerKeys parsing (config-file bytes). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/gossip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* The first newline splits the two values. */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *keys = strchr(text, '\n');
    if (keys)
        *keys++ = '\0';
    static nsrv_gossip_peer_list_t l;
    char err[256];
    if (nsrv_gossip_parse_peers(text, keys ? keys : "", 1, &l, err, sizeof err) == 0) {
        for (size_t i = 0; i < l.n; i++) {
            if (l.confs[i].nkeys == 0 || l.confs[i].node_id == 1 || !l.confs[i].addr)
                abort();
        }
        /* What the parser accepts, the peer table takes: literals get their address, host
         * names none until resolved. */
        nsrv_gossip_peers_t *t = nsrv_gossip_peers_create(0);
        if (nsrv_gossip_peers_configure(t, l.confs, l.n) != 0)
            abort();
        for (size_t i = 0; i < nsrv_gossip_peers_count(t); i++) {
            nsrv_gossip_peer_t *p = nsrv_gossip_peers_at(t, i);
            if (nsrv_gossip_peer_has_addr(p) == (nsrv_gossip_peer_host(p) != NULL))
                abort();
        }
        nsrv_gossip_peers_destroy(&t);
    }
    free(text);
    return 0;
}
