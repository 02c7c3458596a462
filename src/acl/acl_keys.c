/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The adminAclFile: "accessKey=secretKey" lines, the credentials admin tools
 * sign with (mqadmin's conf/tools.yml holds the same pair). The file holds
 * secrets, so it is refused unless only its owner can read it, and no error
 * message ever quotes a secret.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsrv/acl.h"
#include "nsrv/alloc.h"

/* Far above any real key list; bounds what a wrong path can make us read. */
#define KEY_FILE_MAX (1024 * 1024)

typedef struct {
    char *access;
    char *secret;
    size_t secret_len;
} acl_key_t;

struct nsrv_acl_keys {
    acl_key_t *v;
    size_t n, cap;
};

static bool is_blank(char c) {
    return c == ' ' || c == '\t';
}

static void trim(const char **a, const char **b) {
    while (*a < *b && is_blank(**a))
        (*a)++;
    while (*b > *a && is_blank((*b)[-1]))
        (*b)--;
}

static void add_key(nsrv_acl_keys_t *k, const char *ak, size_t ak_len, const char *sk,
                    size_t sk_len) {
    if (k->n == k->cap) {
        k->cap = k->cap ? 2 * k->cap : 8;
        k->v = nsrv_realloc(k->v, k->cap * sizeof *k->v);
    }
    acl_key_t *e = &k->v[k->n++];
    e->access = nsrv_strndup(ak, ak_len);
    e->secret = nsrv_strndup(sk, sk_len);
    e->secret_len = sk_len;
}

int nsrv_acl_keys_parse(const char *text, size_t len, nsrv_acl_keys_t **out, char *err,
                        size_t err_cap) {
    nsrv_acl_keys_t *k = nsrv_calloc(1, sizeof *k);
    const char *p = text, *end = text + len;
    unsigned line = 0;
    while (p < end) {
        line++;
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *a = p, *b = eol ? eol : end;
        p = eol ? eol + 1 : end;
        if (b > a && b[-1] == '\r')
            b--;
        if (b > a && memchr(a, '\0', (size_t)(b - a))) {
            snprintf(err, err_cap, "line %u contains a NUL byte", line);
            goto fail;
        }
        trim(&a, &b);
        if (a == b || *a == '#')
            continue;
        const char *eq = memchr(a, '=', (size_t)(b - a));
        if (!eq) {
            snprintf(err, err_cap, "line %u: expected accessKey=secretKey", line);
            goto fail;
        }
        const char *ka = a, *kb = eq, *sa = eq + 1, *sb = b;
        trim(&ka, &kb);
        trim(&sa, &sb);
        if (ka == kb || sa == sb) {
            snprintf(err, err_cap, "line %u: empty %s", line, ka == kb ? "accessKey" : "secretKey");
            goto fail;
        }
        char *ak = nsrv_strndup(ka, (size_t)(kb - ka));
        bool dup = nsrv_acl_keys_secret(k, ak) != NULL;
        nsrv_free(ak);
        if (dup) {
            snprintf(err, err_cap, "line %u: accessKey '%.*s' is given twice", line, (int)(kb - ka),
                     ka);
            goto fail;
        }
        add_key(k, ka, (size_t)(kb - ka), sa, (size_t)(sb - sa));
    }
    *out = k;
    return 0;
fail:
    nsrv_acl_keys_free(&k);
    return -1;
}

int nsrv_acl_keys_load(const char *path, nsrv_acl_keys_t **out, char *err, size_t err_cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, err_cap, "adminAclFile '%s': %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    int rc = -1;
    char *text = NULL;
    if (fstat(fd, &st) != 0) {
        snprintf(err, err_cap, "adminAclFile '%s': %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, err_cap, "adminAclFile '%s' is not a regular file", path);
        goto done;
    }
    if (st.st_mode & 077) {
        snprintf(err, err_cap,
                 "adminAclFile '%s' has mode %04o: it holds secrets, so group and others must "
                 "have no access (chmod 600)",
                 path, (unsigned)(st.st_mode & 07777));
        goto done;
    }
    if (st.st_size > KEY_FILE_MAX) {
        snprintf(err, err_cap, "adminAclFile '%s' is larger than %d bytes", path, KEY_FILE_MAX);
        goto done;
    }
    size_t cap = (size_t)st.st_size + 1, len = 0;
    text = nsrv_malloc(cap);
    for (;;) {
        ssize_t r = read(fd, text + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, err_cap, "adminAclFile '%s': %s", path, strerror(errno));
            goto done;
        }
        if (r == 0)
            break;
        len += (size_t)r;
        if (len == cap) { /* grew since fstat */
            snprintf(err, err_cap, "adminAclFile '%s' changed while being read", path);
            goto done;
        }
    }
    char perr[200] = "";
    if (nsrv_acl_keys_parse(text, len, out, perr, sizeof perr) != 0) {
        snprintf(err, err_cap, "adminAclFile '%s': %s", path, perr);
        goto done;
    }
    rc = 0;
done:
    if (text) {
        sodium_memzero(text, (size_t)st.st_size + 1);
        nsrv_free(text);
    }
    close(fd);
    return rc;
}

const char *nsrv_acl_keys_secret(const nsrv_acl_keys_t *k, const char *access_key) {
    for (size_t i = 0; k && i < k->n; i++)
        if (strcmp(k->v[i].access, access_key) == 0)
            return k->v[i].secret;
    return NULL;
}

size_t nsrv_acl_keys_count(const nsrv_acl_keys_t *k) {
    return k ? k->n : 0;
}

void nsrv_acl_keys_free(nsrv_acl_keys_t **kp) {
    nsrv_acl_keys_t *k = kp ? *kp : NULL;
    if (!k)
        return;
    for (size_t i = 0; i < k->n; i++) {
        sodium_memzero(k->v[i].secret, k->v[i].secret_len);
        nsrv_free(k->v[i].secret);
        nsrv_free(k->v[i].access);
    }
    nsrv_free(k->v);
    nsrv_free(k);
    *kp = NULL;
}
