/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Crash-safe whole-file persistence (tmp + fsync + rename + directory fsync)
 * and capped whole-file reads. Blocking; used at startup and for the small
 * kvConfig.json / properties files. The crash hook is a plain global meant
 * for tests only.
 */
#include "nsrv/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "nsrv/alloc.h"

int (*nsrv_file_crash_hook)(const char *tmp_path) = NULL;

/*
 * New files and directories get 0666/0777 filtered by the umask, which is
 * what Java's FileOutputStream and File.mkdirs() give the Java NameServer.
 */
#define FILE_MODE 0666
#define DIR_MODE 0777

/* Copy chunk for the .bak copy; the files are small, this just bounds stack use. */
#define COPY_CHUNK 8192

/* Initial read buffer when the size is unknown (pipes, /proc files). */
#define READ_CHUNK 4096

static char *path_with_suffix(const char *path, const char *suffix) {
    size_t a = strlen(path), b = strlen(suffix);
    char *p = nsrv_malloc(a + b + 1);
    memcpy(p, path, a);
    memcpy(p + a, suffix, b + 1);
    return p;
}

char *nsrv_file_dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        return nsrv_strdup(".");
    if (slash == path)
        return nsrv_strdup("/");
    return nsrv_strndup(path, (size_t)(slash - path));
}

/* mkdir -p: creates every missing component of dir. */
static int make_dirs(const char *dir) {
    struct stat st;
    if (stat(dir, &st) == 0)
        return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
    char *p = nsrv_strdup(dir);
    int rc = 0;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char saved = *s;
        *s = '\0';
        if (mkdir(p, DIR_MODE) != 0 && errno != EEXIST) {
            rc = -errno;
            break;
        }
        *s = saved;
        if (saved == '\0')
            break;
    }
    if (rc == 0 && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)))
        rc = -ENOTDIR;
    nsrv_free(p);
    return rc;
}

/* op(the directory holding path): the directory's name is a copy the caller need not free. */
static int on_dir_of(const char *path, int (*op)(const char *dir)) {
    char *dir = nsrv_file_dir_of(path);
    int rc = op(dir);
    nsrv_free(dir);
    return rc;
}

int nsrv_file_make_parent_dirs(const char *path) {
    return on_dir_of(path, make_dirs);
}

/* read(2) retried on EINTR: bytes read, 0 at end of file, or -errno. */
static ssize_t read_some(int fd, void *buf, size_t n) {
    for (;;) {
        ssize_t r = read(fd, buf, n);
        if (r >= 0 || errno != EINTR)
            return r < 0 ? -errno : r;
    }
}

int nsrv_fd_write_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* writev(2) until every byte of iov[0..n) is written: at most IOV_MAX pieces a call, a
 * partial write resumed inside its piece, EINTR retried. Returns 0 or -errno. */
static int writev_all(int fd, const struct iovec *iov, size_t n) {
    size_t i = 0, skip = 0; /* skip: bytes of iov[i] already written */
    struct iovec batch[IOV_MAX];
    while (i < n) {
        int cnt = 0;
        for (size_t k = i; k < n && cnt < IOV_MAX; k++, cnt++) {
            size_t from = k == i ? skip : 0;
            batch[cnt].iov_base = (char *)iov[k].iov_base + from;
            batch[cnt].iov_len = iov[k].iov_len - from;
        }
        ssize_t w = writev(fd, batch, cnt);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        size_t left = (size_t)w;
        while (i < n && left >= iov[i].iov_len - skip) {
            left -= iov[i].iov_len - skip;
            skip = 0;
            i++;
        }
        skip += left;
    }
    return 0;
}

static int fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = 0;
    /* Some filesystems cannot fsync a directory; the rename is then as durable as it gets. */
    if (fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP)
        rc = -errno;
    close(fd);
    return rc;
}

int nsrv_file_sync_dir_of(const char *path) {
    return on_dir_of(path, fsync_dir);
}

static void name_or_id(const char *name, unsigned id, char *out, size_t cap) {
    if (name)
        snprintf(out, cap, "%s", name);
    else
        snprintf(out, cap, "%u", id);
}

void nsrv_file_owner_names(uid_t uid, gid_t gid, char *user, size_t user_cap, char *group,
                           size_t group_cap) {
    const struct passwd *pw = getpwuid(uid);
    name_or_id(pw ? pw->pw_name : NULL, (unsigned)uid, user, user_cap);
    const struct group *gr = getgrgid(gid);
    name_or_id(gr ? gr->gr_name : NULL, (unsigned)gid, group, group_cap);
}

/* Closes fd, keeping the first error: close() can report a deferred write error. */
static int close_keep(int fd, int rc) {
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    return rc;
}

/*
 * Fills tmp_path from either memory pieces (src_fd < 0) or an open file,
 * then fsyncs it. On failure the temp file is removed.
 */
static int write_tmp(const char *tmp_path, const struct iovec *iov, size_t iovcnt, int src_fd) {
    int fd = open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, FILE_MODE);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (src_fd < 0) {
        rc = writev_all(fd, iov, iovcnt);
    } else {
        char chunk[COPY_CHUNK];
        for (;;) {
            ssize_t n = read_some(src_fd, chunk, sizeof chunk);
            if (n <= 0) {
                rc = (int)n;
                break;
            }
            rc = nsrv_fd_write_all(fd, chunk, (size_t)n);
            if (rc < 0)
                break;
        }
    }
    if (rc == 0 && fsync(fd) != 0)
        rc = -errno;
    rc = close_keep(fd, rc);
    if (rc < 0)
        unlink(tmp_path);
    return rc;
}

/*
 * Saves path's current content as "<path>.bak" through "<path>.bak.tmp" and a
 * rename, so a crash never leaves a half-written .bak either. A missing path
 * is not an error: there is nothing to back up.
 *
 * The .bak.tmp is a hard link to path when the filesystem allows it: path is
 * never changed in place (every write renames a new file over it), so once
 * the new file replaces it the old inode is the backup, already durable, and
 * a multi-megabyte file costs no copy and no second fsync. Else it is a copy.
 */
static int save_bak(const char *path) {
    int src = open(path, O_RDONLY | O_CLOEXEC);
    if (src < 0)
        return errno == ENOENT ? 0 : -errno;
    char *bak = path_with_suffix(path, ".bak");
    char *bak_tmp = path_with_suffix(path, ".bak.tmp");
    int rc = 0;
    if (unlink(bak_tmp) != 0 && errno != ENOENT)
        rc = -errno;
    struct stat st; /* a symbolic link is copied through, as before: only files are linked */
    bool linked =
        rc == 0 && lstat(path, &st) == 0 && S_ISREG(st.st_mode) && link(path, bak_tmp) == 0;
    if (rc == 0 && !linked)
        rc = write_tmp(bak_tmp, NULL, 0, src);
    if (rc == 0 && rename(bak_tmp, bak) != 0) {
        rc = -errno;
        unlink(bak_tmp);
    }
    close(src);
    nsrv_free(bak_tmp);
    nsrv_free(bak);
    return rc;
}

int nsrv_file_write_atomic(const char *path, const void *data, size_t len, bool keep_bak) {
    if (data == NULL && len > 0)
        return -EINVAL;
    struct iovec one = {(void *)data, len};
    return nsrv_file_write_atomic_iov(path, &one, len ? 1 : 0, keep_bak);
}

int nsrv_file_write_atomic_iov(const char *path, const struct iovec *iov, size_t n, bool keep_bak) {
    if (path == NULL || *path == '\0' || (iov == NULL && n > 0))
        return -EINVAL;
    char *dir = nsrv_file_dir_of(path);
    char *tmp = path_with_suffix(path, ".tmp");
    int rc = make_dirs(dir);
    if (rc < 0)
        goto cleanup;
    if (keep_bak) {
        rc = save_bak(path);
        if (rc < 0)
            goto cleanup;
    }
    rc = write_tmp(tmp, iov, n, -1);
    if (rc < 0)
        goto cleanup;
    if (nsrv_file_crash_hook) {
        /* Simulated crash: leave the temp file behind exactly as a real one would. */
        rc = nsrv_file_crash_hook(tmp);
        if (rc != 0)
            goto cleanup;
    }
    if (rename(tmp, path) != 0) {
        rc = -errno;
        unlink(tmp);
        goto cleanup;
    }
    rc = fsync_dir(dir);
cleanup:
    nsrv_free(tmp);
    nsrv_free(dir);
    return rc;
}

int nsrv_file_read_all(const char *path, size_t max_len, char **out, size_t *out_len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return -EISDIR;
    }
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > (uint64_t)max_len) {
        close(fd);
        return -EFBIG;
    }
    /*
     * st_size is only a hint: the file may change, and /proc files report 0.
     * Reading up to max_len + 1 bytes is what detects a file over the cap.
     */
    if (max_len > SIZE_MAX - 2)
        max_len = SIZE_MAX - 2;
    size_t limit = max_len + 1;
    size_t want = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : READ_CHUNK;
    size_t cap = (want < limit ? want : limit) + 1;
    char *buf = nsrv_malloc(cap);
    size_t len = 0;
    int rc = 0;
    for (;;) {
        if (len == cap - 1) {
            size_t ncap = cap - 1 < limit / 2 ? cap * 2 : limit + 1;
            buf = nsrv_realloc(buf, ncap);
            cap = ncap;
        }
        ssize_t n = read_some(fd, buf + len, cap - 1 - len);
        if (n <= 0) {
            rc = (int)n;
            break;
        }
        len += (size_t)n;
        if (len > max_len) {
            rc = -EFBIG;
            break;
        }
    }
    close(fd);
    if (rc < 0) {
        nsrv_free(buf);
        return rc;
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return 0;
}
