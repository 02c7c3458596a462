/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fast non-cryptographic 32-bit hash of bytes for the in-memory tables (the
 * topic index, the shared route bodies): never 0, so 0 can mark a free slot or
 * an unhashed entry. Not for anything an attacker's collisions could hurt
 * beyond a longer probe: every table confirms a match on the bytes.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

uint32_t nsrv_hash_bytes(const void *p, size_t len);
