/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Crash-safe file persistence shared by the KV store and the config store.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/*
 * Replaces path's content with data[0..len) so that a crash at any moment
 * leaves either the complete old content or the complete new content at path:
 * parent directories are created, the data goes to "<path>.tmp", is fsync'ed,
 * and is renamed over path; then the directory is fsync'ed. When keep_bak is
 * true and path existed, its previous content is first saved the same way as
 * "<path>.bak" (the Java NameServer's convention). Returns 0 or -errno.
 * Blocking: call from the loop thread only for small files.
 */
int nsrv_file_write_atomic(const char *path, const void *data, size_t len, bool keep_bak);

/* nsrv_file_write_atomic of the concatenation of iov[0..n) (written with writev, not copied
 * together first: a big file's parts stay where they are). */
int nsrv_file_write_atomic_iov(const char *path, const struct iovec *iov, size_t n, bool keep_bak);

/*
 * Reads a whole file into a NUL-terminated heap buffer (free with nsrv_free).
 * Returns 0, -ENOENT if absent, -EFBIG above max_len, or another -errno.
 */
int nsrv_file_read_all(const char *path, size_t max_len, char **out, size_t *out_len);

/* mkdir -p of the directory holding path. Returns 0 or -errno (-ENOTDIR when a component
 * is not a directory). */
int nsrv_file_make_parent_dirs(const char *path);

/* write(2) until all len bytes are written (EINTR retried). Returns 0 or -errno. */
int nsrv_fd_write_all(int fd, const void *data, size_t len);

/* The directory part of path ("." when there is none, "/" for top-level files); the caller
 * frees it with nsrv_free. */
char *nsrv_file_dir_of(const char *path);

/* fsync of the directory holding path, so a new name in it survives a crash.
 * Filesystems that cannot fsync a directory count as success. 0 or -errno. */
int nsrv_file_sync_dir_of(const char *path);

/* The names of a user and a group for a message to a person: each id's name, or the id in
 * decimal where the system has no name for it. */
void nsrv_file_owner_names(uid_t uid, gid_t gid, char *user, size_t user_cap, char *group,
                           size_t group_cap);

/* Test hook: when set, nsrv_file_write_atomic calls it after the temp file is
 * written and synced, before the rename; a non-zero return aborts the write
 * there (simulating a crash) and is returned. */
extern int (*nsrv_file_crash_hook)(const char *tmp_path);
