/*
 * libmemcached_route: ask the real libmemcached which server each key goes to.
 *
 *   cc -O2 -o libmemcached_route libmemcached_route.c -lmemcached
 *   libmemcached_route --servers FILE --flavor libmemcached|libmemcached-unweighted|libmemcached-spy
 *                      [--hash NAME] [--lookup generate|by-key] [--order servers-first|behaviors-first]
 *                      [--dump-points]  < keys
 *
 * Prints "KEY<TAB>ADDR" per input line; ADDR is the first token of the server's line as written.
 * No server is contacted (placement is pure computation inside libmemcached).
 *
 * Server file (compat-vectors/FORMAT.md): "HOST:PORT [WEIGHT] [NAME]", '#' comments, IPv6 "[addr]:port".
 * The host is handed to libmemcached without the brackets (as pylibmc does).
 *
 * Behaviour set-up (default --order servers-first):
 *   1. memcached_create; memcached_server_add_with_weight(host, port, weight) for each line (distribution is
 *      still MODULA, so server_add does not switch weighted ketama on by itself);
 *   2. flavor libmemcached:            KETAMA_WEIGHTED=1 (sets key hash md5 + CONSISTENT_WEIGHTED), then HASH=--hash if given
 *      flavor libmemcached-spy:        KETAMA_WEIGHTED=1, DISTRIBUTION=CONSISTENT_KETAMA_SPY, then HASH if given
 *      flavor libmemcached-unweighted: HASH=--hash (default one-at-a-time) FIRST, then KETAMA=1 (which rebuilds the
 *                                      continuum with that hash; setting HASH after KETAMA would NOT rebuild it)
 * --order behaviors-first sets the behaviours before adding servers (pylibmc's order); kept for experiments.
 * Lookup (default --lookup generate): memcached_generate_hash() = index of the server, the same function
 * libmemcached's storage/retrieval path uses (memcached_generate_hash_with_redistribution without auto-eject).
 * --lookup by-key uses memcached_server_by_key() (rejects empty keys and keys > 250 bytes).
 */
#include <libmemcached/memcached.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>

struct srv { char *addr; char *host; unsigned port; unsigned long weight; };

static void die(const char *msg, const char *arg) {
  fprintf(stderr, "libmemcached_route: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
  exit(2);
}

static const struct { const char *name; memcached_hash_t h; } HASHES[] = {
  {"one-at-a-time", MEMCACHED_HASH_DEFAULT}, {"default", MEMCACHED_HASH_DEFAULT},
  {"md5", MEMCACHED_HASH_MD5}, {"crc32", MEMCACHED_HASH_CRC}, {"crc", MEMCACHED_HASH_CRC},
  {"fnv1_64", MEMCACHED_HASH_FNV1_64}, {"fnv1a_64", MEMCACHED_HASH_FNV1A_64},
  {"fnv1_32", MEMCACHED_HASH_FNV1_32}, {"fnv1a_32", MEMCACHED_HASH_FNV1A_32},
  {"hsieh", MEMCACHED_HASH_HSIEH}, {"murmur", MEMCACHED_HASH_MURMUR},
  {"murmur3", MEMCACHED_HASH_MURMUR3}, {"jenkins", MEMCACHED_HASH_JENKINS},
};

static void check(memcached_st *m, memcached_return_t rc, const char *what) {
  if (rc != MEMCACHED_SUCCESS) {
    fprintf(stderr, "libmemcached_route: %s failed: %s\n", what, memcached_last_error_message(m));
    exit(3);
  }
}

static size_t read_servers(const char *path, struct srv **out) {
  FILE *f = fopen(path, "r");
  if (!f) die("cannot open server file", path);
  size_t n = 0, cap = 16;
  struct srv *v = malloc(cap * sizeof *v);
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    char *p = line;
    while (*p && isspace((unsigned char) *p)) p++;
    if (!*p || *p == '#') continue;
    char *tok = strtok(p, " \t\r\n");
    char *wtok = strtok(NULL, " \t\r\n");
    if (n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
    struct srv *s = &v[n++];
    s->addr = strdup(tok);
    s->weight = wtok ? strtoul(wtok, NULL, 10) : 1;
    s->port = 11211;
    if (tok[0] == '[') {
      char *end = strchr(tok, ']');
      if (!end) die("bad IPv6 address", tok);
      s->host = strndup(tok + 1, (size_t)(end - tok - 1));
      if (end[1] == ':') s->port = (unsigned) strtoul(end + 2, NULL, 10);
    } else {
      char *colon = strrchr(tok, ':');
      if (colon) {
        s->host = strndup(tok, (size_t)(colon - tok));
        s->port = (unsigned) strtoul(colon + 1, NULL, 10);
      } else {
        s->host = strdup(tok);
      }
    }
  }
  fclose(f);
  *out = v;
  return n;
}

static void set_behaviors(memcached_st *m, const char *flavor, int have_hash, memcached_hash_t h) {
  if (!strcmp(flavor, "libmemcached") || !strcmp(flavor, "libmemcached-spy")) {
    check(m, memcached_behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1), "KETAMA_WEIGHTED");
    if (!strcmp(flavor, "libmemcached-spy"))
      check(m, memcached_behavior_set(m, MEMCACHED_BEHAVIOR_DISTRIBUTION,
                                      MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA_SPY), "DISTRIBUTION=SPY");
    if (have_hash) check(m, memcached_behavior_set(m, MEMCACHED_BEHAVIOR_HASH, h), "HASH");
  } else if (!strcmp(flavor, "libmemcached-unweighted")) {
    check(m, memcached_behavior_set(m, MEMCACHED_BEHAVIOR_HASH, have_hash ? h : MEMCACHED_HASH_DEFAULT), "HASH");
    check(m, memcached_behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA, 1), "KETAMA");
  } else {
    die("unknown flavor", flavor);
  }
}

int main(int argc, char **argv) {
  const char *servers = NULL, *flavor = NULL, *hash = NULL, *lookup = "generate", *order = "servers-first";
  int dump = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--servers") && i + 1 < argc) servers = argv[++i];
    else if (!strcmp(argv[i], "--flavor") && i + 1 < argc) flavor = argv[++i];
    else if (!strcmp(argv[i], "--hash") && i + 1 < argc) hash = argv[++i];
    else if (!strcmp(argv[i], "--lookup") && i + 1 < argc) lookup = argv[++i];
    else if (!strcmp(argv[i], "--order") && i + 1 < argc) order = argv[++i];
    else if (!strcmp(argv[i], "--dump-points")) dump = 1;
    else die("bad argument", argv[i]);
  }
  if (!servers || !flavor) die("usage: --servers FILE --flavor F [--hash H]", NULL);
  int have_hash = 0;
  memcached_hash_t h = MEMCACHED_HASH_DEFAULT;
  if (hash) {
    for (size_t i = 0; i < sizeof HASHES / sizeof HASHES[0]; i++)
      if (!strcmp(hash, HASHES[i].name)) { h = HASHES[i].h; have_hash = 1; }
    if (!have_hash) die("unknown hash", hash);
  }
  struct srv *v;
  size_t n = read_servers(servers, &v);
  if (n == 0) die("no servers in", servers);

  memcached_st *m = memcached_create(NULL);
  if (!strcmp(order, "behaviors-first")) set_behaviors(m, flavor, have_hash, h);
  for (size_t i = 0; i < n; i++)
    check(m, memcached_server_add_with_weight(m, v[i].host, (in_port_t) v[i].port, (uint32_t) v[i].weight),
          "memcached_server_add_with_weight");
  if (strcmp(order, "behaviors-first")) set_behaviors(m, flavor, have_hash, h);
  if (memcached_server_count(m) != n) die("server count mismatch", NULL);

  if (dump) {
    /* Debug: print the key hash of each input line (the point hash is not exposed by the API). */
    fprintf(stderr, "key_hash=%d distribution=%d weighted=%d\n",
            (int) memcached_behavior_get(m, MEMCACHED_BEHAVIOR_HASH),
            (int) memcached_behavior_get(m, MEMCACHED_BEHAVIOR_DISTRIBUTION),
            (int) memcached_behavior_get(m, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED));
  }

  int by_key = !strcmp(lookup, "by-key");
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, stdin)) != -1) {
    if (len > 0 && line[len - 1] == '\n') line[--len] = 0;
    if (len > 0 && line[len - 1] == '\r') line[--len] = 0;
    uint32_t idx;
    if (by_key) {
      memcached_return_t rc;
      const memcached_instance_st *inst = memcached_server_by_key(m, line, (size_t) len, &rc);
      if (!inst) { fprintf(stderr, "server_by_key failed for key %s: %s\n", line, memcached_strerror(m, rc)); return 4; }
      idx = UINT32_MAX;
      for (uint32_t i = 0; i < n; i++)
        if (memcached_server_instance_by_position(m, i) == inst) idx = i;
    } else {
      idx = memcached_generate_hash(m, line, (size_t) len);
    }
    if (idx >= n) die("lookup returned no server", line);
    fwrite(line, 1, (size_t) len, stdout);
    putchar('\t');
    fputs(v[idx].addr, stdout);
    putchar('\n');
  }
  free(line);
  memcached_free(m);
  return 0;
}
