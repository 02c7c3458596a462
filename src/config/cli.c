/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command line of nsrvd, compatible with mqnamesrv (NamesrvStartup, proto/requests.md §5.3):
 * -c/--configFile, -p/--printConfigItem, -h/--help, -n/--namesrvAddr (accepted
 * and ignored, as in Java) plus --version and a leading subcommand word.
 * Like commons-cli's DefaultParser, a long option may also be written with a
 * single dash (-configFile).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nsrv/common.h"
#include "nsrv/config.h"

typedef enum { OPT_CONFIG, OPT_PRINT, OPT_HELP, OPT_VERSION, OPT_NAMESRV } opt_id_t;

typedef struct {
    opt_id_t id;
    char short_name; /* 0 if none */
    const char *long_name;
    bool has_arg;
} opt_desc_t;

static const opt_desc_t opts[] = {
    {OPT_CONFIG, 'c', "configFile", true},   {OPT_PRINT, 'p', "printConfigItem", false},
    {OPT_HELP, 'h', "help", false},          {OPT_VERSION, 0, "version", false},
    {OPT_NAMESRV, 'n', "namesrvAddr", true},
};

/* Finds the option named by arg (which starts with '-'). On a match sets
 * *inline_val to text glued to it ("-cFILE", "--configFile=FILE") or NULL. */
static const opt_desc_t *match_opt(const char *arg, const char **inline_val) {
    const char *name = arg + 1;
    bool double_dash = arg[1] == '-';
    if (double_dash)
        name++;
    *inline_val = NULL;
    /* Long names: "--name", "--name=v", "-name", "-name=v". */
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        size_t n = strlen(opts[i].long_name);
        if (strncmp(name, opts[i].long_name, n) == 0 && (name[n] == '\0' || name[n] == '=')) {
            if (name[n] == '=')
                *inline_val = name + n + 1;
            return &opts[i];
        }
    }
    if (double_dash || name[0] == '\0')
        return NULL;
    /* Short names: "-c", "-cFILE", "-c=FILE". */
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        if (opts[i].short_name && name[0] == opts[i].short_name) {
            if (name[1] == '\0')
                return &opts[i];
            if (!opts[i].has_arg)
                return NULL; /* "-px": no clustering of flags */
            *inline_val = name[1] == '=' ? name + 2 : name + 1;
            return &opts[i];
        }
    }
    return NULL;
}

int nsrv_cli_parse(int argc, char **argv, nsrv_cli_t *out, char *err, size_t errlen) {
    nsrv_cli_t r;
    memset(&r, 0, sizeof r);
    if (err && errlen)
        err[0] = '\0';

    int i = 1;
    if (argc > 1 && argv[1][0] != '-') {
        r.subcommand = argv[1];
        r.sub_argc = argc - 2;
        r.sub_argv = argv + 2;
        *out = r;
        return 0;
    }
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            if (i + 1 < argc)
                return nsrv_fail(err, errlen, -EINVAL, "unexpected argument '%s'", argv[i + 1]);
            break;
        }
        if (arg[0] != '-' || arg[1] == '\0')
            return nsrv_fail(err, errlen, -EINVAL, "unexpected argument '%s'", arg);
        const char *val;
        const opt_desc_t *o = match_opt(arg, &val);
        if (!o)
            return nsrv_fail(err, errlen, -EINVAL, "unrecognized option: %s", arg);
        if (o->has_arg && !val) {
            if (i + 1 >= argc)
                return nsrv_fail(err, errlen, -EINVAL, "missing argument for option: %s", arg);
            val = argv[++i];
        } else if (!o->has_arg && val) {
            return nsrv_fail(err, errlen, -EINVAL, "option takes no argument: %s", arg);
        }
        switch (o->id) {
        case OPT_CONFIG:
            if (r.config_file)
                return nsrv_fail(err, errlen, -EINVAL, "option %s given more than once", arg);
            if (val[0] == '\0')
                return nsrv_fail(err, errlen, -EINVAL, "empty file name for option %s", arg);
            r.config_file = val;
            break;
        case OPT_PRINT:
            r.print_config = true;
            break;
        case OPT_HELP:
            r.help = true;
            break;
        case OPT_VERSION:
            r.version = true;
            break;
        case OPT_NAMESRV:
            r.namesrv_addr = val;
            break;
        }
    }
    *out = r;
    return 0;
}

void nsrv_cli_usage(FILE *f) {
    fputs("usage: nsrvd [-c <file>] [-h] [-n <addr>] [-p] [--version]\n"
          "       nsrvd status [HOST:PORT | -c <file>] [--json]\n"
          "       nsrvd keygen -o <secret_key_file> -n <node_id> [-k <key_id>]\n"
          " -c,--configFile <file>     Name server config properties file\n"
          " -h,--help                  Print help\n"
          " -n,--namesrvAddr <addr>    Name server address list (accepted for mqnamesrv\n"
          "                            compatibility and ignored)\n"
          " -p,--printConfigItem       Print all config items and exit\n"
          "    --version               Print the version and exit\n"
          "Subcommands (nsrvd <subcommand> --help for more):\n"
          "  status    show a running node's view (node, gossip peers, brokers) from its\n"
          "            status listener (statusPort); without HOST:PORT it reads -c <file>,\n"
          "            else " NSRV_PACKAGED_CONFIG "\n"
          "  keygen    make a node's gossip key pair: the secret key to a file, the public\n"
          "            key on stdout as one ID:KEYID:PUBLIC item of gossipPeerKeys\n",
          f);
}

/* The key table with defaults, for --help: the same list nsrvd(8) shows. */
void nsrv_cli_print_keys(FILE *f) {
    fputs("\nConfiguration keys (set in the -c file; default shown, see nsrvd(8)):\n", f);
    char def[256];
    for (size_t i = 0; i < nsrv_config_key_count(); i++) {
        const char *name = nsrv_config_key_name(i);
        int flags = nsrv_config_key_flags(name);
        const char *mark = (flags & NSRV_CONFIG_RUNTIME)                         ? " [runtime]"
                           : (flags & (NSRV_CONFIG_PATH | NSRV_CONFIG_NOUPDATE)) ? " [no update]"
                                                                                 : "";
        fprintf(f, "  %s=%s%s%s\n", name, nsrv_config_key_default_text(i, def, sizeof def),
                nsrv_config_key_default_computed(i) ? "(computed at start)" : "", mark);
    }
}
