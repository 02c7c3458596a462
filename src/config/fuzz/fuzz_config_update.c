/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes UPDATE_NAMESRV_CONFIG bodies. Invariants: the path keys never change
 * through an update, and the persisted (escaped) rendering loads back into a
 * config that renders identically (no key injection, no loss).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/buf.h"
#include "nsrv/config.h"
#include "nsrv/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nsrv_config_t cfg, back;
    nsrv_buf_t remark = NSRV_BUF_INIT, r1 = NSRV_BUF_INIT, r2 = NSRV_BUF_INIT,
               persisted = NSRV_BUF_INIT;
    char err[256];

    nsrv_log_level = -1; /* silence the per-request log lines */
    nsrv_config_init_defaults(&cfg);
    char *kv = strdup(cfg.kv_config_path), *store = strdup(cfg.config_store_path);
    nsrv_config_update(&cfg, (const char *)data, size, &remark);
    nsrv_log_level = -1;
    if (strcmp(cfg.kv_config_path, kv) != 0 || strcmp(cfg.config_store_path, store) != 0)
        abort();

    nsrv_config_render(&cfg, &r1);
    nsrv_config_render_escaped(&cfg, &persisted);
    nsrv_config_init_defaults(&back);
    if (nsrv_config_load_text(&back, "persisted", persisted.data, persisted.len, err, sizeof err) !=
        0)
        abort();
    nsrv_config_render(&back, &r2);
    if (r1.len != r2.len || memcmp(r1.data, r2.data, r1.len) != 0)
        abort();

    nsrv_config_free(&back);
    nsrv_config_free(&cfg);
    nsrv_buf_deinit(&remark);
    nsrv_buf_deinit(&r1);
    nsrv_buf_deinit(&r2);
    nsrv_buf_deinit(&persisted);
    free(kv);
    free(store);
    return 0;
}
