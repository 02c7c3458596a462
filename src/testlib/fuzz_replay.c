/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replays a libFuzzer corpus through LLVMFuzzerTestOneInput without libFuzzer,
 * so every fuzz target's corpus runs in ctest under the normal (and sanitizer)
 * builds. Arguments are files or directories. Also runs a fixed number of
 * deterministic pseudo-random mutations of each file, so the replay is a small
 * fuzz run in itself.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned long files_run;

static uint32_t xorshift(uint32_t *s) {
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

static void run_mutations(const uint8_t *data, size_t size, uint32_t seed) {
    uint8_t *m = malloc(size + 16);
    if (!m)
        return;
    for (int i = 0; i < 200; i++) {
        memcpy(m, data, size);
        size_t n = size;
        int edits = 1 + (int)(xorshift(&seed) % 4);
        for (int e = 0; e < edits && n; e++) {
            size_t pos = xorshift(&seed) % n;
            switch (xorshift(&seed) % 4) {
            case 0:
                m[pos] = (uint8_t)xorshift(&seed);
                break;
            case 1:
                m[pos] ^= (uint8_t)(1u << (xorshift(&seed) % 8));
                break;
            case 2:
                n = pos; /* truncate */
                break;
            default:
                if (n < size + 16) {
                    memmove(m + pos + 1, m + pos, n - pos);
                    m[pos] = (uint8_t) "{}[]\":,0 \\"[xorshift(&seed) % 10];
                    n++;
                }
                break;
            }
        }
        LLVMFuzzerTestOneInput(m, n);
    }
    free(m);
}

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(sz > 0 ? (size_t)sz : 1);
    size_t n = fread(buf, 1, sz > 0 ? (size_t)sz : 0, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    run_mutations(buf, n, (uint32_t)(n * 2654435761u) | 1u);
    free(buf);
    files_run++;
    return 0;
}

static int run_path(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode))
        return run_file(path);
    DIR *d = opendir(path);
    if (!d)
        return 1;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        rc |= run_path(p);
    }
    closedir(d);
    return rc;
}

int main(int argc, char **argv) {
    int rc = 0;
    for (int i = 1; i < argc; i++)
        rc |= run_path(argv[i]);
    printf("replayed %lu corpus files (plus 200 mutations each)\n", files_run);
    return rc || files_run == 0;
}
