/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Service-manager readiness (systemd Type=notify, conf/nsrvd.service): READY=1
 * once the listener accepts, STOPPING=1 when a graceful shutdown begins. Built
 * with libsystemd when pkg-config finds it (NSRV_HAVE_SYSTEMD); without it, or
 * outside systemd (no NOTIFY_SOCKET), these do nothing.
 */
#include "sd_notify.h"

#include <stdio.h>

#ifdef NSRV_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>

#include "nsrv/log.h"

static void notify(const char *state) {
    int rc = sd_notify(0, state);
    if (rc < 0)
        nsrv_log_warn("SERVER", "sd_notify(%s) failed: %d", state, rc);
}
#else
static void notify(const char *state) {
    (void)state;
}
#endif

void nsrv_sd_notify_ready(int port) {
#ifdef NSRV_HAVE_SYSTEMD
    char buf[96];
    snprintf(buf, sizeof buf, "READY=1\nSTATUS=serving on port %d", port);
    notify(buf);
#else
    (void)port;
    notify("READY=1");
#endif
}

void nsrv_sd_notify_stopping(void) {
    notify("STOPPING=1");
}
