/* libmemcached side of perf/compare.sh: routing (memcached_generate_hash) and continuum build
 * (memcached_server_push with KETAMA_WEIGHTED set) over the same servers and keys as the Rust side:
 * servers 127.0.<i/250>.<1+i%250>:11211 weight 1+(i*7)%5, keys "user:<i>".
 * No connection is made: generate_hash and server_push never touch the network.
 *
 *   lmc_route N...      prints "<metric>\t<value>" lines: ns of one repetition after a warm-up
 *                       (compare.sh alternates it with `memshard-perf weighted`, 5 times, and
 *                       takes the medians)
 *
 * libmemcached aborts (assertion in update_continuum) above 100 weighted servers.
 */
#include <libmemcached/memcached.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NKEYS 10000

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static memcached_server_list_st server_list(int n) {
    memcached_server_list_st list = NULL;
    memcached_return_t rc;
    for (int i = 0; i < n; i++) {
        char host[32];
        snprintf(host, sizeof host, "127.0.%d.%d", i / 250, 1 + i % 250);
        list = memcached_server_list_append_with_weight(list, host, 11211, 1 + (uint32_t)(i * 7) % 5, &rc);
        if (rc != MEMCACHED_SUCCESS) { fprintf(stderr, "append: %s\n", memcached_strerror(NULL, rc)); exit(1); }
    }
    return list;
}

static memcached_st *fresh(void) {
    memcached_st *m = memcached_create(NULL);
    if (memcached_behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1) != MEMCACHED_SUCCESS) {
        fprintf(stderr, "KETAMA_WEIGHTED refused\n"); exit(1);
    }
    return m;
}

int main(int argc, char **argv) {
    static char keys[NKEYS][24];
    static size_t lens[NKEYS];
    for (int i = 0; i < NKEYS; i++) lens[i] = (size_t)snprintf(keys[i], sizeof keys[i], "user:%d", i);

    for (int a = 1; a < argc; a++) {
        int n = atoi(argv[a]);
        memcached_server_list_st list = server_list(n);

        /* build: memcached_server_push onto a fresh KETAMA_WEIGHTED handle builds the continuum */
        memcached_st *m = fresh();
        double t0 = now_ns();
        if (memcached_server_push(m, list) != MEMCACHED_SUCCESS) { fprintf(stderr, "push failed\n"); return 1; }
        double one = now_ns() - t0;
        memcached_free(m);
        int iters = (int)(30e6 / (one > 1 ? one : 1));
        if (iters < 3) iters = 3;
        if (iters > 2000) iters = 2000;
        memcached_st **ms = malloc(sizeof *ms * (size_t)iters);
        double build = 0;
        for (int r = 0; r < 2; r++) { /* r == 0: warm-up */
            for (int i = 0; i < iters; i++) ms[i] = fresh();
            t0 = now_ns();
            for (int i = 0; i < iters; i++) memcached_server_push(ms[i], list);
            build = (now_ns() - t0) / iters;
            for (int i = 0; i < iters; i++) memcached_free(ms[i]);
        }
        free(ms);
        printf("build.%d.libmemcached\t%.1f\n", n, build);

        /* route: memcached_generate_hash = key hash + continuum lookup, as libmemcached routes */
        m = fresh();
        memcached_server_push(m, list);
        unsigned long long check = 0;
        for (int i = 0; i < NKEYS; i++) check += (unsigned long long)memcached_generate_hash(m, keys[i], lens[i]) * (unsigned long long)(i % 7 + 1);
        unsigned long long sink = 0;
        for (int w = 0; w < 10; w++) /* warm-up */
            for (int i = 0; i < NKEYS; i++) sink += memcached_generate_hash(m, keys[i], lens[i]);
        int passes = 60;
        t0 = now_ns();
        for (int p = 0; p < passes; p++)
            for (int i = 0; i < NKEYS; i++) sink += memcached_generate_hash(m, keys[i], lens[i]);
        double route = (now_ns() - t0) / ((double)passes * NKEYS);
        printf("route.%d.libmemcached\t%.2f\n", n, route);
        printf("check.%d.libmemcached\t%llu\n", n, check);
        if (sink == 42) puts("");
        memcached_free(m);
        memcached_server_list_free(list);
    }
    return 0;
}
