/* SPDX-License-Identifier: Apache-2.0 */
/* The `nsrvd keygen` subcommand (src/server/keygen_cli.c). */
#pragma once

#include <stdio.h>

/* Runs `nsrvd keygen` with the arguments after the word "keygen"; returns the exit code. */
int nsrv_keygen_cli(int argc, char **argv);
void nsrv_keygen_cli_usage(FILE *f);
