/* SPDX-License-Identifier: Apache-2.0 */
#ifndef NSRV_SERVER_SD_NOTIFY_H
#define NSRV_SERVER_SD_NOTIFY_H

/* Tells the service manager the listener on port accepts connections. */
void nsrv_sd_notify_ready(int port);
/* A one-line status for the service manager (systemctl status), e.g. why not ready yet. */
void nsrv_sd_notify_status(const char *text);
/* Tells the service manager a graceful shutdown has begun. */
void nsrv_sd_notify_stopping(void);

#endif
