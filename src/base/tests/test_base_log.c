/* SPDX-License-Identifier: Apache-2.0 */
/* Log lines stay one line of valid UTF-8 whatever a message carries (include/nsrv/log.h). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "nsrv/log.h"
#include "nsrv/utf8.h"
#include "testlib.h"

static size_t esc(const char *src, size_t len, size_t cap, char *out) {
    size_t n = nsrv_log_escape(out, cap, src, len);
    out[n] = '\0';
    return n;
}

static void test_controls_are_escaped(void **state) {
    (void)state;
    char out[128];
    const char forged[] = "topic\n2026-12-03T00:00:00.000Z 1 ERROR  [SERVER] forged\r\t\x1b[2J\x7f";
    esc(forged, sizeof forged - 1, sizeof out - 1, out);
    assert_string_equal(
        out, "topic\\n2026-12-03T00:00:00.000Z 1 ERROR  [SERVER] forged\\r\\t\\x1b[2J\\x7f");
    /* NUL inside a length-carrying name, and C1 CSI (U+009B). */
    esc("a\0b\xC2\x9B", 5, sizeof out - 1, out);
    assert_string_equal(out, "a\\x00b\\u009b");
    /* Printable text, multi-byte characters included, passes as it is. */
    esc("h\xC3\xA9llo \xE4\xB8\xAD \xF0\x9F\x98\x80", 15, sizeof out - 1, out);
    assert_string_equal(out, "h\xC3\xA9llo \xE4\xB8\xAD \xF0\x9F\x98\x80");
}

static void test_ill_formed_is_replaced(void **state) {
    (void)state;
    char out[64];
    size_t n = esc("a\xFF\xFE"
                   "b\xF0\x9F\x98",
                   7, sizeof out - 1, out);
    assert_string_equal(out,
                        "a" NSRV_UTF8_REPLACEMENT NSRV_UTF8_REPLACEMENT "b" NSRV_UTF8_REPLACEMENT);
    assert_true(nsrv_utf8_valid(out, n));
}

static void test_cut_between_characters(void **state) {
    (void)state;
    char out[16];
    /* 2 + 3 = 5 bytes fit, the 4-byte emoji does not: it is left out whole. */
    assert_int_equal(esc("\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80", 9, 6, out), 5);
    /* An escape is not split either. */
    assert_int_equal(esc("ab\x01", 3, 5, out), 2);
    assert_string_equal(out, "ab");
    assert_int_equal(esc("", 0, 0, out), 0);
}

/* The whole line, through stderr: one newline, at the end, and valid UTF-8 even when the
 * message is cut at the line's limit in the middle of multi-byte characters. */
static void test_write_is_one_valid_line(void **state) {
    (void)state;
    nsrv_test_dir_t dir;
    assert_int_equal(nsrv_test_dir_make(&dir, "log"), 0);
    int fd = open(nsrv_test_dir_join(&dir, "stderr"), O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    assert_true(dup2(fd, STDERR_FILENO) >= 0);
    char big[3000];
    for (size_t i = 0; i + 3 <= sizeof big - 1; i += 3)
        memcpy(big + i, "\xE4\xB8\xAD", 3);
    big[sizeof big - 1] = '\0';
    nsrv_log_write(NSRV_LOG_ERROR, "TEST", "name '%s' and %s", "x\ny", big);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    char line[4096];
    ssize_t n = pread(fd, line, sizeof line, 0);
    close(fd);
    nsrv_test_dir_remove(&dir);
    assert_true(n > 100 && n <= 2048);
    assert_int_equal(line[n - 1], '\n');
    assert_null(memchr(line, '\n', (size_t)n - 1));
    assert_true(nsrv_utf8_valid(line, (size_t)n));
    assert_non_null(strstr(line, "name 'x\\ny'"));
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_controls_are_escaped),
               cmocka_unit_test(test_ill_formed_is_replaced),
               cmocka_unit_test(test_cut_between_characters),
               cmocka_unit_test(test_write_is_one_valid_line))
