/* SPDX-License-Identifier: Apache-2.0 */
/* The `nsrvd status` subcommand (src/server/status_cli.c). */
#pragma once

#include <stdio.h>

/* Runs `nsrvd status` with the arguments after the word "status"; returns the exit code. */
int nsrv_status_cli(int argc, char **argv);
void nsrv_status_cli_usage(FILE *f);
