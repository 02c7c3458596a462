/* SPDX-License-Identifier: Apache-2.0 */
/* The `nsrvd status` subcommand (src/server/status_cli.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Runs `nsrvd status` with the arguments after the word "status"; returns the exit code. */
int nsrv_status_cli(int argc, char **argv);
void nsrv_status_cli_usage(FILE *f);

/* Prints a node's /status reply (the whole HTTP response, len bytes, not NUL-terminated) to
 * out as the table, or the JSON body if json; returns 0, or 1 after a message on errout.
 * "from" names the node in messages. Separate from the socket code so it can be fuzzed. */
int nsrv_status_cli_render(const char *reply, size_t len, bool json, FILE *out, FILE *errout,
                           const char *from);
