/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One process per data file: an advisory lock on "<path>.lock", held for the
 * process's life. The lock is on a sibling file, not on the data file, because
 * the durable writer replaces the data file by rename, which would leave a lock
 * on the old inode behind. The lock file holds the owner's pid (for people; the
 * kernel's lock is the authority), is never deleted (deleting it would let a
 * second process lock a new inode under the same name), and is released by the
 * kernel when the process exits, however it exits.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/*
 * Locks "<path>.lock" (created with its parent directories). Returns an open
 * descriptor (close-on-exec) that keeps the lock, or -1 with the reason in err:
 * "'<path>' is in use by process <pid> (lock file '<path>.lock')" when another
 * process holds it (errno EBUSY), or the system error that stopped the lock
 * (in errno).
 */
int nsrv_pidlock_acquire(const char *path, char *err, size_t errlen);
