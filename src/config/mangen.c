/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nsrvd-mangen: writes the nsrvd(8) manual page (troff) at build time.
 * Keys, types, defaults and update flags come from the key table compiled
 * into nsrv_config; each key's meaning is the comment block above it in
 * conf/nsrvd.properties.example (which test_config_load keeps equal to the
 * table). A key without a description stops the build, so the page cannot
 * fall behind the code.
 *
 * usage: nsrvd-mangen EXAMPLE_PROPERTIES VERSION OUTPUT
 *        nsrvd-mangen --reloadable readme|unit
 * The second form prints the keys a SIGHUP applies as the README block (between its
 * reloadable-keys markers) or the comment in conf/nsrvd.service; ctest reloadable_keys
 * checks that both files hold exactly that, so the page, the unit and the README agree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/config.h"

#define MAX_DESC 2048

/* Writes text as troff body text: backslashes escaped, no line may start
 * with a control character. */
static void put_text(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\e", f);
        else if (*s == '-')
            fputs("\\-", f);
        else
            fputc(*s, f);
    }
}

static void put_line(FILE *f, const char *s) {
    if (s[0] == '.' || s[0] == '\'')
        fputs("\\&", f);
    put_text(f, s);
    fputc('\n', f);
}

/* Descriptions indexed like the key table, taken from the example file. */
static char **read_descriptions(const char *path) {
    FILE *in = fopen(path, "r");
    if (!in) {
        perror(path);
        return NULL;
    }
    size_t n = nsrv_config_key_count();
    char **desc = calloc(n, sizeof *desc);
    char pending[MAX_DESC] = "";
    char line[1024];
    while (desc && fgets(line, sizeof line, in)) {
        line[strcspn(line, "\r\n")] = '\0';
        const char *p = line[0] == '#' ? line + 1 : line;
        size_t klen = strcspn(p, "=");
        bool assigned = false;
        for (size_t i = 0; p[klen] == '=' && i < n; i++) {
            const char *name = nsrv_config_key_name(i);
            if (strlen(name) == klen && strncmp(p, name, klen) == 0) {
                free(desc[i]);
                desc[i] = strdup(pending);
                assigned = true;
            }
        }
        if (assigned || line[0] == '\0' || strncmp(line, "# ---", 5) == 0) {
            pending[0] = '\0';
            continue;
        }
        if (line[0] != '#')
            continue;
        const char *text = line[1] == ' ' ? line + 2 : line + 1;
        /* Update flags are rendered from the table, not from the comment. */
        if (strncmp(text, "[runtime] ", 10) == 0)
            text += 10;
        else if (strncmp(text, "[no update] ", 12) == 0)
            text += 12;
        size_t used = strlen(pending);
        snprintf(pending + used, sizeof pending - used, "%s%s", used ? "\n" : "", text);
    }
    fclose(in);
    return desc;
}

/* Writes the reloadable keys as words after prefix, wrapped before width columns. */
static void put_reloadable(FILE *f, const char *prefix, const char *open, const char *close,
                           const char *sep, size_t width) {
    size_t cap = nsrv_config_key_count() + 1;
    const char **names = nsrv_malloc(cap * sizeof *names);
    size_t n = nsrv_config_keys_with(NSRV_CONFIG_RELOAD, names, cap);
    size_t col = 0;
    for (size_t i = 0; i < n; i++) {
        const char *tail = i + 1 < n ? sep : "";
        size_t need = strlen(open) + strlen(names[i]) + strlen(close) + strlen(sep);
        if (col && col + 1 + need > width) {
            fputc('\n', f);
            col = 0;
        }
        if (col == 0) {
            fputs(prefix, f);
            col = strlen(prefix);
        } else {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%s%s%s%s", open, names[i], close, tail);
        col += need - strlen(sep) + strlen(tail);
    }
    fputc('\n', f);
    nsrv_free(names);
}

/* The forms --reloadable writes: the list as each file that repeats it holds it. */
static const struct {
    const char *form, *lead, *prefix, *open, *close, *sep;
} reloadable_forms[] = {
    {"readme",
     "A SIGHUP (`systemctl reload nsrvd`) applies these keys; a changed key not listed here is\n"
     "named in one warning and takes effect at the next start:\n",
     "", "`", "`", ","},
    {"unit",
     "# SIGHUP applies these keys (nsrvd(8), SIGNALS); a changed key not listed is named in\n"
     "# one warning and takes effect at the next start:\n",
     "#   ", "", "", ""},
};

static int write_reloadable(FILE *f, const char *form) {
    for (size_t i = 0; i < sizeof reloadable_forms / sizeof reloadable_forms[0]; i++) {
        if (strcmp(form, reloadable_forms[i].form) != 0)
            continue;
        fputs(reloadable_forms[i].lead, f);
        put_reloadable(f, reloadable_forms[i].prefix, reloadable_forms[i].open,
                       reloadable_forms[i].close, reloadable_forms[i].sep, 96);
        return 0;
    }
    return -1;
}

/* The sections after the key list are fixed text; each has its own function so
 * that a section can change without touching the generated part. */
static void write_exit_status(FILE *f) {
    fputs(".SH EXIT STATUS\n"
          ".TP\n0\nThe node shut down after SIGTERM or SIGINT; \\fB\\-p\\fR, \\fB\\-h\\fR and\n"
          "\\fB\\-\\-version\\fR printed what they print; \\fBkeygen\\fR wrote its key;\n"
          "\\fBstatus\\fR got the node's answer.\n"
          ".TP\n1\nThe node could not start: a bad value in the configuration file, a port\n"
          "in use, a key file that cannot be read or is readable by others, a data file\n"
          "held by another nsrvd, a certificate that does not load. The reason is\n"
          "printed and the boot line never is, so no start script or systemd takes the\n"
          "node for ready. Also: a usage error, a second signal during the graceful\n"
          "shutdown, \\fBkeygen\\fR or \\fBstatus\\fR failing.\n",
          f);
}

static void write_signals(FILE *f) {
    fputs(".SH SIGNALS\n"
          ".TP\nSIGTERM, SIGINT\nGraceful shutdown: the node tells its gossip peers it is\n"
          "leaving, stops accepting connections, answers every request it has received\n"
          "(never with GO_AWAY, which a 5.3.x client answers by retrying at the closed\n"
          "listener), closes each connection behind its next reply or after 250 ms of\n"
          "silence, and exits within \\fBshutdownWaitTimeSeconds\\fR. A second signal\n"
          "exits at once with status 1.\n"
          ".TP\nSIGHUP\nRe\\-read the \\fB\\-c\\fR file and apply the keys marked\n"
          "\\fI[reload]\\fR, each group (log level, TLS, address service, access policy,\n"
          "gossip peers and keys) all or nothing: a group that fails keeps its running\n"
          "values, with the reason in the log. The log names the changed keys applied, and\n"
          "one warning every changed key that waits for the next start. A file that does\n"
          "not load leaves the running configuration as it is. The keys:\n.br\n",
          f);
    put_reloadable(f, "", "", "", ",", 72);
    fputs(".TP\nSIGPIPE\nIgnored: a peer that goes away mid\\-write does not stop the node.\n", f);
}

static void write_files(FILE *f) {
    fputs(
        ".SH FILES\n"
        ".TP\n/etc/nsrvd/nsrvd.properties\nConfiguration read by the packaged service, and by\n"
        "\\fBnsrvd status\\fR when given no address.\n"
        ".TP\n/var/lib/nsrvd\nHome of the \\fBnsrvd\\fR user: kvConfig, gossip state and keys of\n"
        "the packaged service.\n"
        ".TP\n$HOME/namesrv/kvConfig.json\nThe KV store (\\fBkvConfigPath\\fR), rewritten whole\n"
        "after each change; the previous content is kept as kvConfig.json.bak.\n"
        ".TP\n$HOME/namesrv/gossip.state\nThe gossip incarnation (\\fBgossipStatePath\\fR; by\n"
        "default next to \\fBkvConfigPath\\fR). A node locks its data files while it runs:\n"
        "on one host, every node needs its own.\n"
        ".TP\n/etc/rocketmq/tls.properties\n\\fBtls.config.file\\fR: its tls.* keys override\n"
        "the configuration file's when it exists.\n"
        ".TP\n/usr/lib/nsrvd/nsrvd\\-crypto.so\nTLS and ACL signatures (OpenSSL), loaded only\n"
        "when used.\n"
        ".TP\n/usr/share/doc/nsrvd/README.md\nThe operator's guide: clusters, ports, rolling\n"
        "restarts, troubleshooting.\n",
        f);
}

static void write_examples(FILE *f) {
    fputs(".SH EXAMPLES\n"
          "Start a node with the packaged configuration, or print what it would use:\n"
          ".PP\n.RS\n.nf\nnsrvd \\-c /etc/nsrvd/nsrvd.properties\nnsrvd \\-c "
          "/etc/nsrvd/nsrvd.properties \\-p\n"
          ".fi\n.RE\n.PP\n"
          "Make node 1's gossip key; the printed item (\\fI1:1:public\\-key\\fR) goes, with\n"
          "the other nodes' items, into \\fBgossipPeerKeys\\fR on every node:\n"
          ".PP\n.RS\n.nf\nrunuser \\-u nsrvd \\-\\- nsrvd keygen \\-o /var/lib/nsrvd/node.key \\-n "
          "1\n"
          ".fi\n.RE\n.PP\n"
          "Node 1 of three (hosts a, b, c):\n"
          ".PP\n.RS\n.nf\ngossipEnable=true\ngossipNodeId=1\ngossipPeers=2@b:9878,3@c:9878\n"
          "gossipPeerKeys=1:1:\\fIpub\\-a\\fR,2:1:\\fIpub\\-b\\fR,3:1:\\fIpub\\-c\\fR\n"
          "gossipSecretKeyFile=/var/lib/nsrvd/node.key\nstatusPort=9877\n"
          ".fi\n.RE\n.PP\n"
          "Brokers list every node (\\fBnamesrvAddr=a:9876;b:9876;c:9876\\fR). Look at a\n"
          "node's peers and brokers, the address service, and reload the configuration:\n"
          ".PP\n.RS\n.nf\nnsrvd status\nnsrvd status b:9877 \\-\\-json\n"
          "curl http://127.0.0.1:9877/rocketmq/nsaddr\nsystemctl reload nsrvd\n"
          ".fi\n.RE\n",
          f);
}

static void write_see_also(FILE *f) {
    fputs(".SH SEE ALSO\n"
          "\\fBsystemctl\\fR(1), \\fBjournalctl\\fR(1), \\fBsystemd.service\\fR(5);\n"
          "/usr/share/doc/nsrvd/README.md (the guide) and /usr/share/doc/nsrvd/docs/\n"
          "(design notes, benchmarks, the differences from the Java NameServer).\n",
          f);
}

static void write_page(FILE *f, const char *version, char **desc) {
    fprintf(f, ".\\\" Generated by nsrvd-mangen from the configuration key table; do not edit.\n");
    fprintf(f, ".TH NSRVD 8 \"\" \"nsrvd %s\" \"System Administration\"\n", version);
    fputs(".SH NAME\nnsrvd \\- Apache RocketMQ NameServer daemon\n"
          ".SH SYNOPSIS\n"
          ".B nsrvd\n[\\fB\\-c\\fR \\fIfile\\fR] [\\fB\\-p\\fR] [\\fB\\-n\\fR \\fIaddr\\fR]"
          " [\\fB\\-h\\fR] [\\fB\\-\\-version\\fR]\n.br\n"
          ".B nsrvd status\n[\\fIhost\\fB:\\fIport\\fR | \\fB\\-c\\fR \\fIfile\\fR] "
          "[\\fB\\-\\-json\\fR]\n.br\n"
          ".B nsrvd keygen\n\\fB\\-o\\fR \\fIsecret_key_file\\fR \\fB\\-n\\fR \\fInode_id\\fR"
          " [\\fB\\-k\\fR \\fIkey_id\\fR]\n"
          ".SH DESCRIPTION\n"
          "\\fBnsrvd\\fR is a NameServer for Apache RocketMQ: brokers register with it and\n"
          "clients ask it for topic routes, over the RocketMQ remoting protocol. It reads\n"
          "the same properties file as the Java NameServer (\\fBmqnamesrv \\-c\\fR). Nodes\n"
          "may also exchange signed broker\\-live digests over UDP (gossip).\n"
          ".PP\n"
          "On SIGTERM or SIGINT it stops accepting connections, answers what it received,\n"
          "and exits within \\fBshutdownWaitTimeSeconds\\fR.\n"
          ".SH OPTIONS\n"
          ".TP\n\\fB\\-c\\fR, \\fB\\-\\-configFile\\fR \\fIfile\\fR\n"
          "Properties file to read; UPDATE_NAMESRV_CONFIG rewrites it.\n"
          ".TP\n\\fB\\-p\\fR, \\fB\\-\\-printConfigItem\\fR\n"
          "Print the effective configuration and exit.\n"
          ".TP\n\\fB\\-n\\fR, \\fB\\-\\-namesrvAddr\\fR \\fIaddr\\fR\n"
          "Accepted for mqnamesrv compatibility and ignored.\n"
          ".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\n"
          "Print usage and the configuration keys with their defaults.\n"
          ".TP\n\\fB\\-\\-version\\fR\nPrint the version and exit.\n"
          ".SH CONFIGURATION\n"
          "Keys are set in the \\fB\\-c\\fR file as \\fIkey\\fB=\\fIvalue\\fR. Keys marked\n"
          "\\fI[runtime]\\fR take effect at once when changed by UPDATE_NAMESRV_CONFIG, the\n"
          "others after a restart; keys marked \\fI[no update]\\fR are refused by it. Keys\n"
          "marked \\fI[reload]\\fR are applied by SIGHUP (see SIGNALS).\n",
          f);
    char def[256];
    for (size_t i = 0; i < nsrv_config_key_count(); i++) {
        const char *name = nsrv_config_key_name(i);
        int flags = nsrv_config_key_flags(name);
        fprintf(f, ".TP\n\\fB%s\\fR (%s, default ", name, nsrv_config_key_type_text(i));
        if (nsrv_config_key_default_computed(i)) {
            fputs("computed at start", f);
        } else {
            nsrv_config_key_default_text(i, def, sizeof def);
            fputs("\\(lq", f);
            put_text(f, def);
            fputs("\\(rq", f);
        }
        fputs(")", f);
        if (flags & NSRV_CONFIG_RUNTIME)
            fputs(" \\fI[runtime]\\fR", f);
        else if (flags & (NSRV_CONFIG_PATH | NSRV_CONFIG_NOUPDATE))
            fputs(" \\fI[no update]\\fR", f);
        if (flags & NSRV_CONFIG_RELOAD)
            fputs(" \\fI[reload]\\fR", f);
        fputc('\n', f);
        char *rest = desc[i];
        while (rest && *rest) {
            char *nl = strchr(rest, '\n');
            if (nl)
                *nl = '\0';
            put_line(f, rest);
            rest = nl ? nl + 1 : rest + strlen(rest);
        }
    }
    write_exit_status(f);
    write_signals(f);
    write_files(f);
    write_examples(f);
    write_see_also(f);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--reloadable") == 0) {
        if (write_reloadable(stdout, argv[2]) == 0)
            return 0;
    }
    if (argc != 4) {
        fprintf(stderr, "usage: nsrvd-mangen EXAMPLE_PROPERTIES VERSION OUTPUT\n"
                        "       nsrvd-mangen --reloadable readme|unit\n");
        return 2;
    }
    char **desc = read_descriptions(argv[1]);
    if (!desc)
        return 1;
    int rc = 0;
    for (size_t i = 0; i < nsrv_config_key_count(); i++) {
        if (!desc[i] || !desc[i][0]) {
            fprintf(stderr, "nsrvd-mangen: %s: no description for key %s\n", argv[1],
                    nsrv_config_key_name(i));
            rc = 1;
        }
    }
    FILE *out = rc == 0 ? fopen(argv[3], "w") : NULL;
    if (rc == 0 && !out) {
        perror(argv[3]);
        rc = 1;
    }
    if (out) {
        write_page(out, argv[2], desc);
        if (fclose(out) != 0) {
            perror(argv[3]);
            rc = 1;
        }
    }
    for (size_t i = 0; i < nsrv_config_key_count(); i++)
        free(desc[i]);
    free(desc);
    return rc;
}
