/* A program of an older fulgur_client.h against the new libfulgur_client
 * (docs/c-abi.md): its fulgur_client_options is shorter (no `ranks`), and
 * the library must read no byte past its struct_size. Also the other
 * halves of the convention a program sees: the versions, strerror, the
 * handle's message, and a destroy racing a send on another thread.
 * Run in a temporary folder (c_abi_test.sh); exit code 0 when every check holds. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep under -std=c11 */
#include <fulgur/ensemble/fulgur_client.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static int failures = 0;

static void check(int ok, const char* what, int line) {
  if (ok) return;
  fprintf(stderr, "old_options.c:%d: %s does not hold; the thread's last error: %s\n", line, what,
          fulgur_client_last_error());
  ++failures;
}
#define CHECK(cond) check((cond) != 0, #cond, __LINE__)

/* fulgur_client_options as a header before `ranks` declared it. */
typedef struct {
  size_t struct_size;
  int64_t queue_capacity;
  int32_t when_full;
  double connect_timeout_s;
  double close_timeout_s;
} older_options;

/* The bytes a caller's struct lies in, followed by 0xff: what a library
 * that reads past struct_size would take for the fields the caller lacks
 * (ranks = -1, an error). */
typedef union {
  fulgur_client_options current;
  unsigned char bytes[256];
} padded_options;

static padded_options older(double connect_timeout_s) {
  padded_options p;
  memset(p.bytes, 0xff, sizeof p.bytes);
  const older_options o = {sizeof(older_options), 3, FULGUR_CLIENT_DROP_OLDEST, connect_timeout_s, 0.2};
  memcpy(p.bytes, &o, sizeof o);
  return p;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A send loop on one thread while the main thread destroys the handle. */
static void* sender(void* arg) {
  fulgur_client* c = (fulgur_client*)arg;
  const float x[2] = {1, 2}, y[1] = {3};
  const int64_t x_shape[2] = {1, 2}, y_shape[2] = {1, 1};
  for (int i = 0; i < 20000; ++i) {
    const fulgur_client_status s = fulgur_client_send(c, x, x_shape, 2, y, y_shape, 2);
    if (s == FULGUR_CLIENT_INVALID_HANDLE) return NULL; /* destroyed: what it must answer from now on */
    if (s != FULGUR_CLIENT_OK) return (void*)1;
  }
  return NULL;
}

int main(void) {
  /* A rendezvous file naming a port nobody listens on: ZeroMQ connects lazily, so connect succeeds. */
  FILE* f = fopen("ensemble.rendezvous", "w");
  if (f == NULL) return 1;
  fputs("# fulgur ensemble rendezvous\nkey 000102030405060708090a0b0c0d0e0f\nrank 0 tcp://127.0.0.1:1\n", f);
  fclose(f);
  chmod("ensemble.rendezvous", 0600);

  /* Versions: the header's and the library's agree; strerror names every status. */
  CHECK(fulgur_client_version_number() == FULGUR_VERSION_NUMBER);
  CHECK(strcmp(fulgur_client_version(), FULGUR_VERSION) == 0);
  CHECK(strcmp(fulgur_client_strerror(FULGUR_CLIENT_CLOSED), "closed") == 0);
  CHECK(strcmp(fulgur_client_strerror((fulgur_client_status)99), "unknown status") == 0);
  CHECK(strstr(fulgur_client_errmsg(NULL), "not a live fulgur_client") != NULL);

  /* The older, shorter struct: its fields are honoured (a queue of 3 that drops, a 0.2 s close), the
   * missing `ranks` is the default, and the 0xff past it is never read. */
  padded_options p = older(5.0);
  fulgur_client* c = NULL;
  CHECK(fulgur_client_connect("ensemble.rendezvous", 7, &p.current, &c) == FULGUR_CLIENT_OK);
  if (c != NULL) {
    const float x[2] = {1, 2}, y[1] = {3};
    const int64_t x_shape[2] = {1, 2}, y_shape[2] = {1, 1};
    for (int i = 0; i < 10; ++i) CHECK(fulgur_client_send(c, x, x_shape, 2, y, y_shape, 2) == FULGUR_CLIENT_OK);
    int64_t sent = -1, dropped = -1, queued = -1;
    const double start = now();
    CHECK(fulgur_client_close(c, &sent, &dropped, &queued) == FULGUR_CLIENT_UNACKNOWLEDGED);  /* no server */
    CHECK(now() - start < 30.0);  /* close_timeout_s 0.2 from the struct, not the default 60 */
    printf("older options: sent %ld, dropped %ld, queued %ld\n", (long)sent, (long)dropped, (long)queued);
    CHECK(sent + dropped + queued == 10);
    CHECK(dropped >= 3);  /* queue_capacity 3 and DROP_OLDEST from the struct (the default queues 64) */
    /* The handle keeps the failure's message for any thread; a closed handle stays valid until destroyed. */
    CHECK(strstr(fulgur_client_errmsg(c), "close_timeout_s passed") != NULL);
    CHECK(fulgur_client_send(c, x, x_shape, 2, y, y_shape, 2) == FULGUR_CLIENT_CLOSED);
    CHECK(strstr(fulgur_client_errmsg(c), "closed") != NULL);
    fulgur_client_destroy(c);
    CHECK(fulgur_client_send(c, x, x_shape, 2, y, y_shape, 2) == FULGUR_CLIENT_INVALID_HANDLE);
  }

  /* The same bytes read as the current struct would take ranks = -1: the check above can fail. */
  p = older(5.0);
  p.current.struct_size = sizeof(fulgur_client_options);
  CHECK(fulgur_client_connect("ensemble.rendezvous", 7, &p.current, &c) == FULGUR_CLIENT_INVALID_ARGUMENT);
  CHECK(c == NULL);

  /* A struct_size never set, and a newer header's longer struct: refused unless its unknown fields are zero. */
  fulgur_client_options unset;
  memset(&unset, 0, sizeof unset);
  CHECK(fulgur_client_connect("ensemble.rendezvous", 7, &unset, &c) == FULGUR_CLIENT_INVALID_ARGUMENT);
  CHECK(strstr(fulgur_client_last_error(), "struct_size") != NULL && strstr(fulgur_client_last_error(), "got 0"));
  padded_options newer;
  memset(newer.bytes, 0, sizeof newer.bytes);
  newer.current = fulgur_client_default_options();
  newer.current.close_timeout_s = 0.2;
  newer.current.struct_size = sizeof(fulgur_client_options) + 8;
  CHECK(fulgur_client_connect("ensemble.rendezvous", 7, &newer.current, &c) == FULGUR_CLIENT_OK);
  fulgur_client_destroy(c);
  newer.bytes[sizeof(fulgur_client_options) + 3] = 1;
  CHECK(fulgur_client_connect("ensemble.rendezvous", 7, &newer.current, &c) == FULGUR_CLIENT_INVALID_ARGUMENT);

  /* A destroy racing a send on another thread: the send answers OK until the handle is gone, then
   * INVALID_HANDLE; nothing crashes. */
  p = older(5.0);
  p.current.struct_size = sizeof(older_options);
  for (int round = 0; round < 20; ++round) {
    c = NULL;
    CHECK(fulgur_client_connect("ensemble.rendezvous", 8, &p.current, &c) == FULGUR_CLIENT_OK);
    if (c == NULL) break;
    pthread_t thread;
    pthread_create(&thread, NULL, sender, c);
    const struct timespec pause = {0, 1000000L * round};
    nanosleep(&pause, NULL);
    fulgur_client_destroy(c);
    void* result = NULL;
    pthread_join(thread, &result);
    CHECK(result == NULL);
  }

  if (failures == 0) printf("old_options: every check holds\n");
  return failures == 0 ? 0 : 1;
}
