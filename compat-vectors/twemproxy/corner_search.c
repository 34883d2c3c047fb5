/*
 * corner_search: finds md5 continuum corners for twemproxy (distribution: ketama).
 * Used only to *choose* server names and keys; placements come from nutcracker.
 *
 * point(name, i, x) = little-endian u32 of md5("NAME-i") bytes 4x..4x+3
 * key hash (hash: md5) = little-endian u32 of md5(key) bytes 0..3
 *
 * usage: corner_search KIND NNAMES NKEYS NI
 *   KIND: named   -> names "n<id>"
 *         h11211  -> names "127.A.B.C" (servers at port 11211: name = host)
 *         hostport-> names "127.0.B.C:PORT"
 *   keys are "ck<k>".
 * prints
 *   TIE   value nameA iA xA nameB iB xB            (first 3000)
 *   HIT   value name i x key                       (first 3000)
 *   TRIPLE value nameA iA xA nameB iB xB key       (all)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <openssl/md5.h>

static const char *kind;

static void mkname(uint32_t id, char *buf, size_t n) {
    if (!strcmp(kind, "named")) {
        snprintf(buf, n, "n%u", id);
    } else if (!strcmp(kind, "h11211")) {
        snprintf(buf, n, "127.%u.%u.%u", 1 + (id / (254 * 254)) % 254, 1 + (id / 254) % 254, 1 + id % 254);
    } else {
        snprintf(buf, n, "127.0.%u.%u:%u", 1 + (id / 254) % 254, 1 + id % 254, 20000 + id / (254 * 254));
    }
}

static uint32_t le(const unsigned char *d, int x) {
    return (uint32_t)d[4 * x] | ((uint32_t)d[4 * x + 1] << 8) | ((uint32_t)d[4 * x + 2] << 16) | ((uint32_t)d[4 * x + 3] << 24);
}

static int cmp64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage\n"); return 2; }
    kind = argv[1];
    uint32_t nn = (uint32_t)atol(argv[2]), nk = (uint32_t)atol(argv[3]), ni = (uint32_t)atol(argv[4]);
    size_t ne = (size_t)nn * ni * 4;
    uint64_t *e = malloc(ne * sizeof *e);
    size_t k = 0;
    char buf[128], nb[96], nb2[96];
    unsigned char d[16];
    for (uint32_t id = 0; id < nn; id++) {
        mkname(id, nb, sizeof nb);
        for (uint32_t i = 0; i < ni; i++) {
            int len = snprintf(buf, sizeof buf, "%s-%u", nb, i);
            MD5((unsigned char *)buf, (size_t)len, d);
            for (int x = 0; x < 4; x++)
                e[k++] = ((uint64_t)le(d, x) << 32) | ((uint64_t)id << 8) | (i << 2) | (uint32_t)x;
        }
    }
    qsort(e, ne, sizeof *e, cmp64);
    int ties = 0;
    for (size_t a = 0; a + 1 < ne && ties < 3000; a++) {
        if ((e[a] >> 32) == (e[a + 1] >> 32) && ((e[a] >> 8) & 0xffffff) != ((e[a + 1] >> 8) & 0xffffff)) {
            mkname((e[a] >> 8) & 0xffffff, nb, sizeof nb);
            mkname((e[a + 1] >> 8) & 0xffffff, nb2, sizeof nb2);
            printf("TIE %u %s %u %u %s %u %u\n", (uint32_t)(e[a] >> 32), nb, (uint32_t)(e[a] >> 2) & 63, (uint32_t)e[a] & 3,
                   nb2, (uint32_t)(e[a + 1] >> 2) & 63, (uint32_t)e[a + 1] & 3);
            ties++;
        }
    }
    int hits = 0;
    for (uint32_t q = 0; q < nk; q++) {
        int len = snprintf(buf, sizeof buf, "ck%u", q);
        MD5((unsigned char *)buf, (size_t)len, d);
        uint64_t h = le(d, 0);
        size_t lo = 0, hi = ne;
        while (lo < hi) { size_t m = (lo + hi) / 2; if ((e[m] >> 32) < h) lo = m + 1; else hi = m; }
        if (lo < ne && (e[lo] >> 32) == h) {
            mkname((e[lo] >> 8) & 0xffffff, nb, sizeof nb);
            if (hits < 3000) {
                printf("HIT %lu %s %u %u %s\n", (unsigned long)h, nb, (uint32_t)(e[lo] >> 2) & 63, (uint32_t)e[lo] & 3, buf);
                hits++;
            }
            if (lo + 1 < ne && (e[lo + 1] >> 32) == h && ((e[lo] >> 8) & 0xffffff) != ((e[lo + 1] >> 8) & 0xffffff)) {
                mkname((e[lo + 1] >> 8) & 0xffffff, nb2, sizeof nb2);
                printf("TRIPLE %lu %s %u %u %s %u %u %s\n", (unsigned long)h, nb, (uint32_t)(e[lo] >> 2) & 63, (uint32_t)e[lo] & 3,
                       nb2, (uint32_t)(e[lo + 1] >> 2) & 63, (uint32_t)e[lo + 1] & 3, buf);
            }
        }
    }
    free(e);
    return 0;
}
