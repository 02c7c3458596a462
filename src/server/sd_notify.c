/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Service-manager readiness (systemd Type=notify, conf/nsrvd.service): READY=1
 * once the listener accepts, STOPPING=1 when a graceful shutdown begins.
 *
 * The notify protocol is one datagram of newline-separated VAR=value lines sent
 * to the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or an abstract name when
 * it starts with '@'). systemd documents it as stable and invites daemons to
 * speak it themselves; doing so spares linking libsystemd, whose text (and that
 * of libgcrypt, libgpg-error, libzstd, liblzma and liblz4 it pulls in) would
 * otherwise be resident in every idle process. Outside a service manager (no
 * NOTIFY_SOCKET) these do nothing.
 */
#include "sd_notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "nsrv/log.h"

/* Fills addr from $NOTIFY_SOCKET; returns the address length, 0 when unset, -1 when unusable. */
static int notify_address(struct sockaddr_un *addr) {
    const char *name = getenv("NOTIFY_SOCKET");
    if (name == NULL || name[0] == '\0')
        return 0;
    size_t len = strlen(name);
    /* Only a filesystem path or an abstract name; systemd's other forms (vsock:) are not ours. */
    if ((name[0] != '/' && name[0] != '@') || len >= sizeof addr->sun_path)
        return -1;
    memset(addr, 0, sizeof *addr);
    addr->sun_family = AF_UNIX;
    memcpy(addr->sun_path, name, len);
    if (name[0] == '@') {
        addr->sun_path[0] = '\0'; /* abstract: the length, not a NUL, ends the name */
        return (int)(offsetof(struct sockaddr_un, sun_path) + len);
    }
    return (int)(offsetof(struct sockaddr_un, sun_path) + len + 1);
}

static void notify(const char *state) {
    struct sockaddr_un addr;
    int alen = notify_address(&addr);
    if (alen == 0)
        return;
    if (alen < 0) {
        nsrv_log_warn("SERVER", "NOTIFY_SOCKET is not a unix socket path or @name; not notifying");
        return;
    }
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        nsrv_log_warn("SERVER", "sd_notify(%s): socket: %s", state, strerror(errno));
        return;
    }
    ssize_t n;
    do
        n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&addr,
                   (socklen_t)alen);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        nsrv_log_warn("SERVER", "sd_notify(%s) failed: %s", state, strerror(errno));
    close(fd);
}

void nsrv_sd_notify_status(const char *text) {
    char buf[256];
    snprintf(buf, sizeof buf, "STATUS=%s", text);
    notify(buf);
}

void nsrv_sd_notify_ready(int port) {
    char buf[96];
    snprintf(buf, sizeof buf, "READY=1\nSTATUS=serving on port %d", port);
    notify(buf);
}

void nsrv_sd_notify_stopping(void) {
    notify("STOPPING=1");
}
