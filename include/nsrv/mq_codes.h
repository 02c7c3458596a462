/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RocketMQ request and response codes nsrvd serves and emits, as enums
 * generated from the wire tables proto/request_codes.def and
 * proto/response_codes.def. No other file writes a code as a number.
 */
#pragma once

enum {
#define X(code, name) NSRV_REQ_##name = code,
#include "request_codes.def"
#undef X
};

enum {
#define X(code, name) NSRV_RESP_##name = code,
#include "response_codes.def"
#undef X
};
