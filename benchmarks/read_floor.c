/* The CPU floor of reading random records of a page-cached file.
 *
 * What a random-access reader that keeps its RSS flat pays per record at
 * the least: one pread system call (no Python), against reading the same
 * records through a memory map (whose pages then count in the RSS).
 *
 *   cc -O2 -o /tmp/read_floor benchmarks/read_floor.c
 *   /tmp/read_floor FILE RECORD_BYTES READS
 *
 * e.g. the 8x vector chunk split of bench_random_access.py (records of
 * 2,094 bytes): /tmp/read_floor /tmp/rlds_lite_bench/ra_vectors_8x_chunks/
 * 1.0.0/ra_vectors_8x_chunks-train.tfrecord-00000 2094 200000
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s FILE RECORD_BYTES READS\n", argv[0]);
    return 2;
  }
  int fd = open(argv[1], O_RDONLY);
  long record = atol(argv[2]), reads = atol(argv[3]);
  if (fd < 0 || record <= 0 || reads <= 0) {
    fprintf(stderr, "%s: cannot open, or bad numbers\n", argv[1]);
    return 2;
  }
  off_t size = lseek(fd, 0, SEEK_END);
  long records = size / record;
  char *out = malloc(record * reads);
  long *rows = malloc(sizeof(long) * reads);
  srand(1);
  for (long i = 0; i < reads; i++)
    rows[i] = ((long)rand() * RAND_MAX + rand()) % records;
  for (long i = 0; i < records; i++)  /* Into the page cache. */
    if (pread(fd, out, record, i * record) != record) return 1;

  double start = cpu_seconds();
  for (long i = 0; i < reads; i++)
    if (pread(fd, out + i * record, record, rows[i] * record) != record)
      return 1;
  double pread_us = 1e6 * (cpu_seconds() - start) / reads;

  char *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  madvise(map, size, MADV_RANDOM);
  start = cpu_seconds();
  for (long i = 0; i < reads; i++)
    memcpy(out + i * record, map + rows[i] * record, record);
  double mapped_us = 1e6 * (cpu_seconds() - start) / reads;

  printf("%ld random reads of %ld-byte records of %ld: pread %.2f us of CPU "
         "per record; through a memory map %.2f us\n",
         reads, record, records, pread_us, mapped_us);
  return 0;
}
