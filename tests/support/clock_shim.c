/* A clock shim for redis-server (LD_PRELOAD): its wall clock, as
 * gettimeofday and clock_gettime(CLOCK_REALTIME) read it, runs ahead of
 * the real one by the milliseconds (a little-endian int64) in the file
 * named by SIDEJOB_CLOCK_OFFSET, mapped so that a test steps the clock by
 * writing the file. Monotonic clocks are left alone, as NTP leaves them. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t *offset_ms;
static int (*real_clock_gettime)(clockid_t, struct timespec *);

static void shim_init(void) {
  if (!real_clock_gettime)
    real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
  if (offset_ms)
    return;
  const char *path = getenv("SIDEJOB_CLOCK_OFFSET");
  if (!path)
    return;
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return;
  void *mapped = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (mapped != MAP_FAILED)
    offset_ms = mapped;
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
  shim_init();
  int result = real_clock_gettime(clock, ts);
  if (result == 0 && offset_ms &&
      (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) {
    int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec +
                 *offset_ms * 1000000;
    ts->tv_sec = ns / 1000000000;
    ts->tv_nsec = ns % 1000000000;
  }
  return result;
}

int gettimeofday(struct timeval *tv, void *tz) {
  (void)tz;
  struct timespec ts;
  int result = clock_gettime(CLOCK_REALTIME, &ts);
  if (result == 0 && tv) {
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
  }
  return result;
}

time_t time(time_t *out) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out)
    *out = ts.tv_sec;
  return ts.tv_sec;
}
