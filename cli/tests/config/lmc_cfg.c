#include <libmemcached/memcached.h>
#include <stdio.h>
#include <string.h>
/* usage: lmc_cfg 'CONFIG STRING' < keys ; prints key\thost:port */
int main(int argc, char **argv) {
  memcached_st *m = memcached(argv[1], strlen(argv[1]));
  if (!m) { char buf[1024]; libmemcached_check_configuration(argv[1], strlen(argv[1]), buf, sizeof buf); fprintf(stderr, "bad config: %s\n", buf); return 2; }
  char line[4096];
  while (fgets(line, sizeof line, stdin)) {
    size_t n = strlen(line); while (n && (line[n-1]=='\n'||line[n-1]=='\r')) line[--n]=0;
    uint32_t idx = memcached_generate_hash(m, line, n);
    const memcached_instance_st *s = memcached_server_instance_by_position(m, idx);
    printf("%s\t%s:%u\n", line, memcached_server_name(s), (unsigned)memcached_server_port(s));
  }
  printf("#weighted=%d dist=%d hash=%d\n", (int)memcached_behavior_get(m, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED), (int)memcached_behavior_get(m, MEMCACHED_BEHAVIOR_DISTRIBUTION), (int)memcached_behavior_get(m, MEMCACHED_BEHAVIOR_HASH));
  return 0;
}
