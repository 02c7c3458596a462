/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Finds and loads nsrvd-crypto.so (crypto.h) relative to the running
 * executable, so the build tree and an installed tree both work without a
 * path compiled in: <dir of nsrvd>/nsrvd-crypto.so in the build tree,
 * <dir of nsrvd>/../lib/nsrvd/nsrvd-crypto.so when installed (/usr/bin/nsrvd,
 * /usr/lib/nsrvd/). The module resolves nsrvd's own helpers (allocation,
 * buffers, properties) from the executable, which exports just those
 * (host_exports.list, read from the module at build time: src/crypto/CMakeLists.txt).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nsrv/crypto.h"
#include "nsrv/config.h"

static const nsrv_crypto_api_t *installed;

void nsrv_crypto_use(const nsrv_crypto_api_t *api) {
    installed = api;
}

const nsrv_crypto_api_t *nsrv_crypto_loaded(void) {
    return installed;
}

/* The directory of the running executable, without a trailing slash. */
static int exe_dir(char *out, size_t outlen) {
    ssize_t n = readlink("/proc/self/exe", out, outlen - 1);
    if (n <= 0 || (size_t)n >= outlen - 1)
        return -1;
    out[n] = '\0';
    char *slash = strrchr(out, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    return 0;
}

int nsrv_crypto_locate(char *out, size_t outlen, char *err, size_t errlen) {
    static const char *const places[] = {"", "/../lib/nsrvd"};
    char dir[PATH_MAX];
    if (exe_dir(dir, sizeof dir) != 0) {
        snprintf(err, errlen, "cannot find nsrvd's own directory (/proc/self/exe): %s",
                 strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
        int n = snprintf(out, outlen, "%s%s/%s", dir, places[i], NSRV_CRYPTO_MODULE);
        if (n > 0 && (size_t)n < outlen && access(out, F_OK) == 0) /* unreadable: dlopen says so */
            return 0;
    }
    snprintf(err, errlen, "%s (TLS and ACL signatures) is neither in %s nor in %s/../lib/nsrvd",
             NSRV_CRYPTO_MODULE, dir, dir);
    return -1;
}

const nsrv_crypto_api_t *nsrv_crypto_get(char *err, size_t errlen) {
    if (installed)
        return installed;
    char path[PATH_MAX];
    if (nsrv_crypto_locate(path, sizeof path, err, errlen) != 0)
        return NULL;
    /* RTLD_NOW: a symbol the executable does not export fails here, not mid-handshake. */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, errlen, "cannot load %s: %s", path, dlerror());
        return NULL;
    }
    const nsrv_crypto_api_t *api = dlsym(h, NSRV_CRYPTO_SYMBOL);
    if (!api || api->abi != NSRV_CRYPTO_ABI || api->size != sizeof *api ||
        api->config_size != sizeof(nsrv_config_t)) {
        snprintf(err, errlen, "%s is not from this build of nsrvd (no %s of ABI %d)", path,
                 NSRV_CRYPTO_SYMBOL, NSRV_CRYPTO_ABI);
        dlclose(h);
        return NULL;
    }
    /* Never unloaded: OpenSSL pins itself, and sessions hold its objects until exit. */
    installed = api;
    return installed;
}
