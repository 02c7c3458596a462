/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the configuration tests. */
#pragma once

#include "nsrv/buf.h"
#include "nsrv/config.h"

/* The configuration as GET_NAMESRV_CONFIG renders it (free with nsrv_free). */
static inline char *ct_render(const nsrv_config_t *cfg) {
    nsrv_buf_t b = NSRV_BUF_INIT;
    nsrv_config_render(cfg, &b);
    return nsrv_buf_steal(&b, NULL);
}
