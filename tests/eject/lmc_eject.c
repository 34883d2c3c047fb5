/* lmc_eject: libmemcached's own auto-eject, for tests/eject_live.rs.
 *
 * usage: lmc_eject FAILURE_LIMIT HOST:PORT:WEIGHT... < keys (one a line)
 *
 * Builds one memcached_st over the servers, in the order given, ketama weighted
 * (MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED: MD5, consistent ketama, weighted point counts) with
 * MEMCACHED_BEHAVIOR_REMOVE_FAILED_SERVERS and MEMCACHED_BEHAVIOR_SERVER_FAILURE_LIMIT.
 * It is not told which server is failing: it gets the keys in turn, over and over, until a
 * request returns MEMCACHED_SERVER_MARKED_DEAD, i.e. libmemcached's backoff handling found a
 * server at its failure limit and ran run_distribution, which rebuilds the continuum without
 * it (update_continuum skips servers whose next_retry is in the future and recomputes the
 * live count and total weight). Output:
 *
 *   before<TAB>KEY<TAB>HOST:PORT    memcached_server_by_key with every server up
 *   #ejected<TAB>HOST:PORT          the server libmemcached marked dead
 *   after<TAB>KEY<TAB>HOST:PORT     memcached_server_by_key after the rebuild
 *   #code<TAB>COUNT<TAB>STRERROR    how the gets ended until then
 *
 * libmemcached counts a server failure only when a connect fails or times out: a read timeout
 * on a TCP connection closes the connection without counting (quit.cc), so the failing server
 * must refuse connections or have stopped accepting them.
 *
 * Exit 3 when no server was marked dead within 120 s.
 */
#include <libmemcached/memcached.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_KEYS 100000

static void print_placement(memcached_st *m, const char *tag, char **keys, size_t nkeys) {
  for (size_t i = 0; i < nkeys; i++) {
    memcached_return_t rc;
    const memcached_instance_st *s = memcached_server_by_key(m, keys[i], strlen(keys[i]), &rc);
    if (!s) {
      fprintf(stderr, "memcached_server_by_key(%s): %s\n", keys[i], memcached_strerror(m, rc));
      exit(2);
    }
    printf("%s\t%s\t%s:%u\n", tag, keys[i], memcached_server_name(s),
           (unsigned) memcached_server_port(s));
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s FAILURE_LIMIT HOST:PORT:WEIGHT... < keys\n", argv[0]);
    return 2;
  }
  memcached_st *m = memcached_create(NULL);
  for (int a = 2; a < argc; a++) {
    char host[256];
    unsigned port, weight;
    if (sscanf(argv[a], "%255[^:]:%u:%u", host, &port, &weight) != 3) {
      fprintf(stderr, "bad server %s\n", argv[a]);
      return 2;
    }
    if (memcached_server_add_with_weight(m, host, (in_port_t) port, weight) != MEMCACHED_SUCCESS) {
      fprintf(stderr, "cannot add %s\n", argv[a]);
      return 2;
    }
  }
  struct {
    memcached_behavior_t b;
    uint64_t v;
  } behaviors[] = {
      {MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1},
      {MEMCACHED_BEHAVIOR_REMOVE_FAILED_SERVERS, 1},
      {MEMCACHED_BEHAVIOR_SERVER_FAILURE_LIMIT, strtoull(argv[1], NULL, 10)},
      /* seconds between connect attempts after a failed one (libmemcached counts seconds) */
      {MEMCACHED_BEHAVIOR_RETRY_TIMEOUT, 1},
      /* seconds a server marked dead stays out of the continuum: longer than this program */
      {MEMCACHED_BEHAVIOR_DEAD_TIMEOUT, 3600},
      /* milliseconds */
      {MEMCACHED_BEHAVIOR_CONNECT_TIMEOUT, 200},
      {MEMCACHED_BEHAVIOR_POLL_TIMEOUT, 100},
  };
  for (size_t i = 0; i < sizeof behaviors / sizeof behaviors[0]; i++) {
    memcached_return_t rc = memcached_behavior_set(m, behaviors[i].b, behaviors[i].v);
    if (rc != MEMCACHED_SUCCESS) {
      fprintf(stderr, "behavior %s: %s\n", libmemcached_string_behavior(behaviors[i].b),
              memcached_strerror(m, rc));
      return 2;
    }
  }

  static char *keys[MAX_KEYS];
  size_t nkeys = 0;
  char line[4096];
  while (fgets(line, sizeof line, stdin)) {
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
    if (n == 0) continue;
    if (nkeys == MAX_KEYS) {
      fprintf(stderr, "too many keys\n");
      return 2;
    }
    keys[nkeys++] = strdup(line);
  }
  if (nkeys == 0) {
    fprintf(stderr, "no keys\n");
    return 2;
  }

  print_placement(m, "before", keys, nkeys);

  unsigned long codes[MEMCACHED_MAXIMUM_RETURN + 1] = {0};
  time_t deadline = time(NULL) + 120;
  int ejected = 0;
  for (size_t i = 0; !ejected; i = (i + 1) % nkeys) {
    if (time(NULL) > deadline) {
      fprintf(stderr, "no server was marked dead within 120 s\n");
      for (int c = 0; c <= MEMCACHED_MAXIMUM_RETURN; c++)
        if (codes[c]) fprintf(stderr, "  %lu x %s\n", codes[c], memcached_strerror(m, c));
      return 3;
    }
    size_t len;
    uint32_t flags;
    memcached_return_t rc;
    char *v = memcached_get(m, keys[i], strlen(keys[i]), &len, &flags, &rc);
    free(v);
    codes[rc < MEMCACHED_MAXIMUM_RETURN ? rc : MEMCACHED_MAXIMUM_RETURN]++;
    if (rc == MEMCACHED_SERVER_MARKED_DEAD) {
      ejected = 1;
    } else if (rc == MEMCACHED_SERVER_TEMPORARILY_DISABLED) {
      /* waiting out the retry timeout: poll gently */
      usleep(2000);
    }
  }

  const memcached_instance_st *dead = memcached_server_get_last_disconnect(m);
  if (!dead) {
    fprintf(stderr, "marked dead, but no last disconnected server\n");
    return 2;
  }
  printf("#ejected\t%s:%u\n", memcached_server_name(dead), (unsigned) memcached_server_port(dead));
  print_placement(m, "after", keys, nkeys);
  for (int c = 0; c <= MEMCACHED_MAXIMUM_RETURN; c++)
    if (codes[c]) printf("#code\t%lu\t%s\n", codes[c], memcached_strerror(m, c));
  memcached_free(m);
  return 0;
}
