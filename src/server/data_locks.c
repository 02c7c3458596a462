/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One process per data: kvConfigPath, configStorePath and (with gossip) the gossip state
 * file are each locked for the process's life (include/nsrv/pidlock.h), so a second nsrvd
 * pointed at the same files refuses to start instead of rewriting them beside the first.
 * One configuration naming the same file for two of them is refused too: each writer would
 * replace the other's content.
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsrv/alloc.h"
#include "nsrv/config.h"
#include "nsrv/fileio.h"
#include "nsrv/gossip.h"
#include "nsrv/log.h"
#include "nsrv/pidlock.h"
#include "server_int.h"

typedef struct {
    const char *key;
    const char *path;
} data_file_t;

/* Locks of one process do not exclude each other, so the same file named twice is found by
 * the lock files' identity: hard and symbolic links and "./" spellings compare equal. */
static bool same_file(int fd_a, int fd_b) {
    struct stat a, b;
    return fstat(fd_a, &a) == 0 && fstat(fd_b, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* The lock failed because this process cannot write the file's directory (EACCES on an
 * existing lock file owned by another user does not count: the rename could still land). */
static bool unwritable_dir(int err, const char *path) {
    if (err == EROFS)
        return true;
    if (err != EACCES && err != EPERM)
        return false;
    char *dir = nsrv_file_dir_of(path);
    bool no_write = access(dir, W_OK) != 0;
    nsrv_free(dir);
    return no_write;
}

int nsrv__data_locks_take(nsrv_server_t *srv) {
    const nsrv_config_t *cfg = srv->cfg;
    char state[4096];
    nsrv_gossip_state_path(cfg, state, sizeof state);
    data_file_t files[NSRV_DATA_LOCKS_MAX];
    const char *locked_key[NSRV_DATA_LOCKS_MAX];
    size_t n = 0;
    if (cfg->kv_config_path[0])
        files[n++] = (data_file_t){"kvConfigPath", cfg->kv_config_path};
    if (cfg->config_store_path[0])
        files[n++] = (data_file_t){"configStorePath", cfg->config_store_path};
    if (cfg->gossip_enable)
        files[n++] = (data_file_t){"gossipStatePath", state};
    for (size_t i = 0; i < n; i++) {
        char err[4200] = "";
        int fd = nsrv_pidlock_acquire(files[i].path, err, sizeof err);
        if (fd < 0 && unwritable_dir(errno, files[i].path)) {
            /* A directory this process cannot write (the packaged /etc/nsrvd under
             * ProtectSystem=strict, where configStorePath is the -c file) cannot hold the
             * lock, but then this process cannot rewrite the file either: nothing to guard. */
            nsrv_log_notice("SERVER", "%s not locked: %s (this process cannot rewrite it either)",
                            files[i].key, err);
            continue;
        }
        if (fd < 0) {
            nsrv_log_error("SERVER", "cannot start: %s %s", files[i].key, err);
            return -1;
        }
        for (size_t j = 0; j < srv->n_data_locks; j++) {
            if (same_file(srv->data_lock_fds[j], fd)) {
                nsrv_log_error("SERVER", "cannot start: %s and %s are the same file '%s'",
                               locked_key[j], files[i].key, files[i].path);
                close(fd);
                return -1;
            }
        }
        locked_key[srv->n_data_locks] = files[i].key;
        srv->data_lock_fds[srv->n_data_locks++] = fd;
    }
    return 0;
}

void nsrv__data_locks_release(nsrv_server_t *srv) {
    for (size_t i = 0; i < srv->n_data_locks; i++)
        close(srv->data_lock_fds[i]);
    srv->n_data_locks = 0;
}
