/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The libuv server: TCP listener, connections, timers, signals and graceful
 * shutdown. Owns the event loop; everything runs on that one thread.
 */
#pragma once

struct nsrv_config;

/*
 * Loads the KV store, binds, prints the boot line and runs until shutdown.
 * config_file (may be NULL) is re-read on SIGHUP to reload the gossip peers
 * and keys. Returns the process exit code: 0 after a graceful shutdown, non-zero when
 * start-up failed (the reason is logged).
 */
int nsrv_server_run(struct nsrv_config *cfg, const char *config_file);
