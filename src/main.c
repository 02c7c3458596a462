/* SPDX-License-Identifier: Apache-2.0 */
/* nsrvd: command line → configuration → server. Nothing else lives here. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/buf.h"
#include "nsrv/config.h"
#include "nsrv/keygen_cli.h"
#include "nsrv/log.h"
#include "nsrv/server.h"
#include "nsrv/status_cli.h"

int main(int argc, char **argv) {
    /* nsrv_cli_parse sets every field; zeroed because the LTO link's
     * maybe-uninitialized analysis cannot see that through its error paths. */
    nsrv_cli_t cli = {0};
    char err[512] = "";
    if (nsrv_cli_parse(argc, argv, &cli, err, sizeof err) != 0) {
        fprintf(stderr, "nsrvd: %s\n", err);
        nsrv_cli_usage(stderr);
        return 1;
    }
    if (cli.help) {
        nsrv_cli_usage(stdout);
        nsrv_cli_print_keys(stdout);
        return 0;
    }
    if (cli.version) {
        printf("nsrvd %s (RocketMQ NameServer protocol V5_3_3)\n", NSRV_VERSION);
        return 0;
    }
    if (cli.subcommand && strcmp(cli.subcommand, "status") == 0)
        return nsrv_status_cli(cli.sub_argc, cli.sub_argv);
    if (cli.subcommand && strcmp(cli.subcommand, "keygen") == 0)
        return nsrv_keygen_cli(cli.sub_argc, cli.sub_argv);
    if (cli.subcommand) {
        fprintf(stderr, "nsrvd: unknown command '%s'\n", cli.subcommand);
        nsrv_cli_usage(stderr);
        return 1;
    }

    nsrv_config_t cfg;
    nsrv_config_init_defaults(&cfg);
    if (cli.config_file) {
        if (nsrv_config_load_file(&cfg, cli.config_file, err, sizeof err) != 0) {
            fprintf(stderr, "nsrvd: %s\n", err);
            nsrv_config_free(&cfg);
            return 1;
        }
        /* NamesrvStartup prints this; some scripts look for it. */
        printf("load config properties file OK, %s\n", cli.config_file);
    }
    nsrv_config_apply_log_level(&cfg);
    if (cli.print_config) {
        nsrv_buf_t out = NSRV_BUF_INIT;
        nsrv_config_render(&cfg, &out);
        fwrite(out.data, 1, out.len, stdout);
        nsrv_buf_deinit(&out);
        nsrv_config_free(&cfg);
        return 0;
    }
    nsrv_config_warn_unknown(&cfg);
    /* A peer that vanishes mid-write must not kill the process. */
    signal(SIGPIPE, SIG_IGN);
    int rc = nsrv_server_run(&cfg, cli.config_file);
    nsrv_config_free(&cfg);
    return rc;
}
