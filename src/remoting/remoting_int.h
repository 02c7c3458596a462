/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private interfaces between the remoting codec files: cmd.c dispatches to
 * one header codec per serialize type (hdr_json.c, hdr_rocketmq.c).
 * Decoders fill only the header fields of *out (which the caller has preset
 * with the Java defaults) and allocate from arena; encoders append only the
 * header bytes.
 */
#pragma once

#include "nsrv/remoting.h"

/* @return 0 or NSRV_EHEADER. */
int nsrv__hdr_json_decode(const uint8_t *p, size_t len, nsrv_arena_t *arena, nsrv_cmd_t *out);
void nsrv__hdr_json_encode(nsrv_buf_t *out, const nsrv_cmd_t *cmd);

/* @return 0 or NSRV_EHEADER. */
int nsrv__hdr_rocketmq_decode(const uint8_t *p, size_t len, nsrv_arena_t *arena, nsrv_cmd_t *out);
/* @return 0, or NSRV_ETOOBIG (b unchanged) if the header would not fit 24 bits. */
int nsrv__hdr_rocketmq_encode(nsrv_buf_t *out, const nsrv_cmd_t *cmd);
