/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stream framing: finds where one RocketMQ frame ends in buffered bytes
 * (proto/remoting.md §2; Java: Netty LengthFieldBasedFrameDecoder in
 * NettyDecoder). Pure; parses untrusted input; fuzzed by fuzz/fuzz_frame.c.
 */
#include "nsrv/remoting.h"

int nsrv_frame_peek(const uint8_t *p, size_t len, size_t max_frame, size_t *frame_len) {
    if (len < 4)
        return NSRV_AGAIN;
    /* N is a signed int32 in Java; reading it unsigned would let 0x80000000+
     * through as a huge positive length instead of Netty's "negative" error. */
    int32_t n = (int32_t)nsrv_load_be32(p);
    /*
     * N < 4 cannot hold the header-length word, which Java only discovers
     * when RemotingCommand.decode throws; either way the connection closes,
     * so refuse it here before buffering anything more.
     */
    if (n < 4)
        return NSRV_EFRAME;
    /* Netty compares N + 4 (the whole frame) with maxFrameLength. */
    uint64_t total = (uint64_t)(uint32_t)n + 4u;
    if (total > (uint64_t)max_frame)
        return NSRV_EFRAME;
    if ((uint64_t)len < total)
        return NSRV_AGAIN;
    *frame_len = (size_t)total;
    return 0;
}
