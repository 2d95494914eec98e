/* The ensemble client's C API from a project outside the tree
 * (find_package(fulgur COMPONENTS client), fulgur::client): no rendezvous
 * file is a CONNECT_ERROR naming it; with a file whose server never
 * answers, a send is queued and close gives up after its timeout, counting
 * it as queued, not sent, and saying so (FULGUR_CLIENT_UNACKNOWLEDGED).
 * Exit code 0 when every check holds. */
#include <fulgur/ensemble/fulgur_client.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures = 0;
#define CHECK(cond)                                                                                        \
  do {                                                                                                     \
    if (!(cond)) {                                                                                         \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond,             \
              fulgur_client_last_error());                                                                 \
      ++failures;                                                                                          \
    }                                                                                                      \
  } while (0)

int main(void) {
  char dir[] = "/tmp/fulgur-client-consumer-XXXXXX";
  if (mkdtemp(dir) == NULL) return 1;
  char path[512];
  snprintf(path, sizeof path, "%s/ensemble.rendezvous", dir);
  fulgur_client_options options = fulgur_client_default_options();
  CHECK(options.queue_capacity == 64 && options.when_full == FULGUR_CLIENT_BLOCK);
  options.connect_timeout_s = 0.2;
  options.close_timeout_s = 0.3;
  fulgur_client* client = NULL;
  fulgur_client_options bad = options;
  bad.queue_capacity = 0;
  CHECK(fulgur_client_connect(path, 1, &bad, &client) == FULGUR_CLIENT_INVALID_ARGUMENT);
  CHECK(strstr(fulgur_client_last_error(), "queue_capacity must be >= 1") != NULL);
  CHECK(fulgur_client_connect(path, 1, &options, &client) == FULGUR_CLIENT_CONNECT_ERROR);
  CHECK(client == NULL);
  CHECK(strstr(fulgur_client_last_error(), "no rendezvous file") != NULL);

  FILE* f = fopen(path, "w");
  if (f == NULL) return 1;
  fputs("key 000102030405060708090a0b0c0d0e0f\nrank 0 tcp://127.0.0.1:1\n", f); /* nobody listens there */
  fclose(f);
  CHECK(fulgur_client_connect(path, 1, &options, &client) == FULGUR_CLIENT_OK);
  const float x[2] = {1.0f, 2.0f}, y[1] = {3.0f};
  const int64_t x_shape[2] = {1, 2}, y_shape[2] = {1, 1};
  CHECK(fulgur_client_send(client, x, x_shape, 2, y, y_shape, 2) == FULGUR_CLIENT_OK);
  CHECK(fulgur_client_send(client, x, x_shape, 0, y, y_shape, 2) == FULGUR_CLIENT_INVALID_ARGUMENT);
  int64_t sent = -1, dropped = -1, queued = -1;
  CHECK(fulgur_client_close(client, &sent, &dropped, &queued) == FULGUR_CLIENT_UNACKNOWLEDGED); /* never OK */
  CHECK(sent == 0 && dropped == 0 && queued == 1);
  CHECK(fulgur_client_send(client, x, x_shape, 2, y, y_shape, 2) == FULGUR_CLIENT_CLOSED);
  fulgur_client_destroy(client);
  unlink(path);
  rmdir(dir);
  printf("%s: %d failure(s)\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures == 0 ? 0 : 1;
}
