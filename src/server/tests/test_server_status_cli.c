/* SPDX-License-Identifier: Apache-2.0 */
/* nsrvd status renders ages a peer reports only when they are non-negative integers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nsrv/status_cli.h"
#include "testlib.h"

/* The node line `nsrvd status` prints for a /status reply whose uptimeMs is `uptime`. */
static char *node_line(const char *uptime) {
    char body[256], reply[512];
    int blen =
        snprintf(body, sizeof body, "{\"node\":{\"version\":\"x\",\"uptimeMs\":%s}}", uptime);
    int rlen = snprintf(reply, sizeof reply, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s",
                        blen, body);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    FILE *err = fopen("/dev/null", "w");
    assert_int_equal(nsrv_status_cli_render(reply, (size_t)rlen, false, out, err, "t"), 0);
    fclose(out);
    fclose(err);
    return text;
}

static void test_bad_ages_show_as_a_dash(void **state) {
    (void)state;
    static const char *const bad[] = {"-1", "null", "true", "\"x\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *text = node_line(bad[i]);
        if (!strstr(text, ", up -,"))
            fail_msg("uptimeMs %s rendered as: %s", bad[i], text);
        free(text);
    }
    char *text = node_line("7500000");
    if (!strstr(text, ", up 2h05m,"))
        fail_msg("uptimeMs 7500000 rendered as: %s", text);
    free(text);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_bad_ages_show_as_a_dash))
