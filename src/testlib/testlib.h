/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test support shared by the cmocka tests (linked into every nsrv_add_test
 * binary): scratch directories and whole-file checks. Not part of nsrvd.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A scratch directory: "<TMPDIR or /tmp>/nsrv-<name>-XXXXXX". */
typedef struct {
    char path[96];
} nsrv_test_dir_t;

/* Creates a fresh directory; 0, or -1 (for a cmocka setup's return). */
int nsrv_test_dir_make(nsrv_test_dir_t *d, const char *name);
/* Removes the directory and everything below it (links are not followed). */
void nsrv_test_dir_remove(const nsrv_test_dir_t *d);
/* "<dir>/<name>" in one of eight rotating static buffers: valid for the next seven calls. */
const char *nsrv_test_dir_join(const nsrv_test_dir_t *d, const char *name);

bool nsrv_test_exists(const char *path);
/* The file's bytes with a NUL after them (free with nsrv_free), or NULL if unreadable. */
char *nsrv_test_read_file(const char *path);
/* Asserts that path holds exactly text. */
void nsrv_test_assert_file(const char *path, const char *text);
/* Writes text to path (atomically, no backup), asserting success. */
void nsrv_test_write_file(const char *path, const char *text);
