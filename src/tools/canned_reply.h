/* SPDX-License-Identifier: Apache-2.0 */
/* The ceiling servers' canned reply (nsrv-ceiling, nsrv-tls-ceiling). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nsrv/arena.h"
#include "nsrv/buf.h"

/* A SUCCESS response frame of exactly frame_bytes (a body of spaces); false if smaller than
 * the bare reply header. */
bool nsrv__canned_build(nsrv_buf_t *out, size_t frame_bytes);

/* A request frame's opaque (read in place from a ROCKETMQ header, decoded from JSON), or -1
 * when the frame is not a command. */
int64_t nsrv__canned_opaque(nsrv_arena_t *arena, const uint8_t *frame, size_t len);

/* Appends the canned reply to out with its opaque set. */
void nsrv__canned_append(nsrv_buf_t *out, const nsrv_buf_t *canned, uint32_t opaque);
