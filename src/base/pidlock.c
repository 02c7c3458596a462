/* SPDX-License-Identifier: Apache-2.0 */
/* Advisory per-file process locks (include/nsrv/pidlock.h). */
#include "nsrv/pidlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nsrv/alloc.h"
#include "nsrv/fileio.h"

/* fcntl locks, not flock: F_GETLK names the holder's pid, so the refusal can say who it is
 * even when its pid text in the file is stale or missing. */
static pid_t holder_of(int fd) {
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type == F_UNLCK)
        return 0;
    return fl.l_pid;
}

static int write_pid(int fd) {
    char text[32];
    int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0)
        return -errno;
    if (lseek(fd, 0, SEEK_SET) < 0)
        return -errno;
    return nsrv_fd_write_all(fd, text, (size_t)n);
}

int nsrv_pidlock_acquire(const char *path, char *err, size_t errlen) {
    size_t n = strlen(path);
    char *lock_path = nsrv_malloc(n + sizeof ".lock");
    memcpy(lock_path, path, n);
    memcpy(lock_path + n, ".lock", sizeof ".lock");
    int fd = -1;
    int rc = nsrv_file_make_parent_dirs(lock_path);
    if (rc == 0) {
        fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        rc = fd < 0 ? -errno : 0;
    }
    if (rc == 0) {
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        if (fcntl(fd, F_SETLK, &fl) != 0) {
            rc = -errno;
            if (rc == -EACCES || rc == -EAGAIN) {
                pid_t pid = holder_of(fd);
                if (pid > 0)
                    snprintf(err, errlen, "'%s' is in use by process %ld (lock file '%s')", path,
                             (long)pid, lock_path);
                else
                    snprintf(err, errlen, "'%s' is in use by another process (lock file '%s')",
                             path, lock_path);
                close(fd);
                nsrv_free(lock_path);
                errno = EBUSY;
                return -1;
            }
        }
    }
    if (rc == 0)
        rc = write_pid(fd);
    if (rc != 0) {
        snprintf(err, errlen, "cannot lock '%s' (lock file '%s'): %s", path, lock_path,
                 strerror(-rc));
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    nsrv_free(lock_path);
    if (fd < 0)
        errno = -rc;
    return fd;
}
