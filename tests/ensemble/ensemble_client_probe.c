/* A small solver for the ensemble tests, in C against libfulgur_client:
 * streams SAMPLES samples of y = sin(3 x0) * x1 (x uniform in [-1, 1]^2,
 * drawn from a generator seeded by CLIENT_ID), PER_SEND at a time, then
 * closes and prints its counts: "client ID: sent S dropped D queued Q".
 *
 *   ensemble_client_probe RENDEZVOUS CLIENT_ID SAMPLES PER_SEND [drop_oldest QUEUE | held_after SENDS]
 *                          held_after: after SENDS sends it waits (60 s) for the test to kill it
 *   ... PER_SEND wide_after SENDS   after SENDS sends, samples of 3 inputs (the stream holds 2)
 *   ... PER_SEND paced MS           MS milliseconds between sends
 *   ... PER_SEND ranks K            sends to K server ranks only (options.ranks)
 *   ... PER_SEND nan_at SENDS       send SENDS holds a NaN in its first sample's inputs and an
 *                                   infinity in its last sample's targets (2 bad samples)
 *   ... PER_SEND close_timeout S    close gives up after S seconds (default 30)
 *   ... PER_SEND window N           queue_capacity N (send waits when it is full; also the
 *                                   messages kept unacknowledged per rank at most)
 * After close it checks the handle's edges: a send and a second close answer
 * FULGUR_CLIENT_CLOSED and touch no output; once destroyed, FULGUR_CLIENT_INVALID_HANDLE;
 * a second destroy is harmless ("edges: ok", else exit code 4).
 * Exit code 0 when close returned FULGUR_CLIENT_OK, 5 for FULGUR_CLIENT_UNACKNOWLEDGED.
 *   ensemble_client_probe RENDEZVOUS garbage     raw ZeroMQ: a message that is no header,
 *                                                one with a bad magic, one whose frames
 *                                                disagree with its header (and no key), and
 *                                                one of protocol version 2; then waits (10 s
 *                                                at most) for the server's answer to that one
 *                                                and prints its version
 * FULGUR_PROBE_CONNECT_TIMEOUT_S (default 30): how long it waits for the rendezvous file.
 * Other failures: exit code 1. */
#include <fulgur/ensemble/fulgur_client.h>

#include <math.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

static float next_uniform(unsigned* state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}

/* The first "rank 0 tcp://..." endpoint of a rendezvous file. */
static int first_endpoint(const char* path, char* endpoint, size_t size) {
  FILE* f = fopen(path, "r");
  char line[512];
  int found = 0;
  while (f != NULL && !found && fgets(line, sizeof line, f) != NULL) {
    char word[16], value[400];
    unsigned rank = 0;
    if (sscanf(line, "%15s %u %399s", word, &rank, value) == 3 && strcmp(word, "rank") == 0 && rank == 0) {
      snprintf(endpoint, size, "%s", value);
      found = 1;
    }
  }
  if (f != NULL) fclose(f);
  return found;
}

/* A closed handle answers FULGUR_CLIENT_CLOSED and touches nothing until destroyed; a destroyed one
 * FULGUR_CLIENT_INVALID_HANDLE. Frees the handle. 0 when all holds. */
static int check_edges(fulgur_client* client) {
  const float x[2] = {0.5f, 0.5f}, y[1] = {0.5f};
  const int64_t x_shape[2] = {1, 2}, y_shape[2] = {1, 1};
  int64_t sent = -7, dropped = -7, queued = -7;
  int failed = 0;
  if (fulgur_client_send(client, x, x_shape, 2, y, y_shape, 2) != FULGUR_CLIENT_CLOSED) failed |= 1;
  if (fulgur_client_close(client, &sent, &dropped, &queued) != FULGUR_CLIENT_CLOSED) failed |= 2;
  if (sent != -7 || dropped != -7 || queued != -7) failed |= 4;
  if (strstr(fulgur_client_last_error(), "closed already") == NULL) failed |= 8;
  fulgur_client_destroy(client);
  if (fulgur_client_send(client, x, x_shape, 2, y, y_shape, 2) != FULGUR_CLIENT_INVALID_HANDLE) failed |= 16;
  if (fulgur_client_close(client, &sent, &dropped, &queued) != FULGUR_CLIENT_INVALID_HANDLE) failed |= 32;
  if (sent != -7) failed |= 64;
  fulgur_client_destroy(client); /* harmless */
  fulgur_client_destroy(NULL);
  if (failed != 0) fprintf(stderr, "edges: failed checks %#x\n", failed);
  else printf("edges: ok\n");
  return failed;
}

static int garbage(const char* rendezvous) {
  char endpoint[400];
  if (!first_endpoint(rendezvous, endpoint, sizeof endpoint)) return 1;
  void* context = zmq_ctx_new();
  void* socket = zmq_socket(context, ZMQ_DEALER);
  if (zmq_connect(socket, endpoint) != 0) return 1;
  unsigned char header[56 + 16];
  memset(header, 0, sizeof header);
  zmq_send(socket, "hello", 5, 0); /* no header at all */
  memcpy(header, "XXXX", 4);       /* the right size, the wrong magic */
  zmq_send(socket, header, 56, 0);
  /* A well-formed header (no key) claiming 1 sample of [2] -> [1] float32, then frames of other sizes. */
  const unsigned magic = 0x31474C46u;
  const unsigned short version = 3, kind = 1, old_version = 2;
  const unsigned count = 1;
  const long long two = 2, one = 1;
  memcpy(header, &magic, 4);
  memcpy(header + 4, &version, 2);
  memcpy(header + 6, &kind, 2);
  header[40] = 1;
  header[41] = 1;
  header[42] = 1;
  memcpy(header + 44, &count, 4);
  memcpy(header + 56, &two, 8);
  memcpy(header + 64, &one, 8);
  zmq_send(socket, header, 72, ZMQ_SNDMORE);
  zmq_send(socket, "abc", 3, ZMQ_SNDMORE);
  zmq_send(socket, "d", 1, 0);
  memcpy(header + 4, &old_version, 2); /* a client of another protocol version: answered, in the server's */
  zmq_send(socket, header, 72, 0);
  int answered = -1;
  zmq_pollitem_t item = {socket, 0, ZMQ_POLLIN, 0};
  while (answered < 0 && zmq_poll(&item, 1, 10000) > 0) {
    unsigned char reply[64];
    const int size = zmq_recv(socket, reply, sizeof reply, 0);
    /* Skips the answer to the keyless message (its flag "key refused"); the version's is little-endian. */
    if (size >= 56 && (reply[44] & 2) == 0) answered = reply[4] | reply[5] << 8;
  }
  int linger = 10000;
  zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof linger);
  zmq_close(socket);
  zmq_ctx_term(context);
  printf("garbage: 4 messages sent; the server answered in protocol version %d\n", answered);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[2], "garbage") == 0) return garbage(argv[1]);
  if (argc != 5 && argc != 7) {
    fprintf(stderr, "usage: ensemble_client_probe RENDEZVOUS CLIENT_ID SAMPLES PER_SEND [drop_oldest QUEUE]\n");
    return 2;
  }
  const long long id = atoll(argv[2]);
  const int samples = atoi(argv[3]), per_send = atoi(argv[4]);
  fulgur_client_options options = fulgur_client_default_options();
  options.connect_timeout_s = 30;
  /* bench/ensemble_load.sh starts thousands before their server: they wait longer for its file. */
  if (getenv("FULGUR_PROBE_CONNECT_TIMEOUT_S") != NULL) options.connect_timeout_s = atof(getenv("FULGUR_PROBE_CONNECT_TIMEOUT_S"));
  options.close_timeout_s = 30;
  int held_after = -1, wide_after = -1, paced_ms = 0, nan_at = -1;
  if (argc == 7 && strcmp(argv[5], "drop_oldest") == 0) {
    options.when_full = FULGUR_CLIENT_DROP_OLDEST;
    options.queue_capacity = atoll(argv[6]);
  } else if (argc == 7 && strcmp(argv[5], "held_after") == 0) {
    held_after = atoi(argv[6]);
  } else if (argc == 7 && strcmp(argv[5], "paced") == 0) {
    paced_ms = atoi(argv[6]);
  } else if (argc == 7 && strcmp(argv[5], "ranks") == 0) {
    options.ranks = atoll(argv[6]);
  } else if (argc == 7 && strcmp(argv[5], "close_timeout") == 0) {
    options.close_timeout_s = atof(argv[6]);
  } else if (argc == 7 && strcmp(argv[5], "window") == 0) {
    options.queue_capacity = atoll(argv[6]);
  } else if (argc == 7 && strcmp(argv[5], "nan_at") == 0) {
    nan_at = atoi(argv[6]);
  } else if (argc == 7 && strcmp(argv[5], "wide_after") == 0) {
    wide_after = atoi(argv[6]);
  } else if (argc == 7) {
    return 2;
  }
  fulgur_client* client = NULL;
  if (fulgur_client_connect(argv[1], id, &options, &client) != FULGUR_CLIENT_OK) {
    fprintf(stderr, "connect: %s\n", fulgur_client_last_error());
    return 1;
  }
  unsigned state = 12345u + (unsigned)id * 7919u;
  float* x = malloc(sizeof(float) * 3 * (size_t)per_send);
  float* y = malloc(sizeof(float) * (size_t)per_send);
  for (int done = 0, sends = 0; done < samples; done += per_send, ++sends) {
    if (sends == held_after) {
      printf("client %lld: held after %d sends\n", id, sends);
      fflush(stdout);
      const struct timespec pause = {60, 0};
      nanosleep(&pause, NULL);
      return 3; /* not killed: the test did not do its part */
    }
    if (paced_ms > 0) {
      const struct timespec pause = {0, paced_ms * 1000000L};
      nanosleep(&pause, NULL);
    }
    const int n = samples - done < per_send ? samples - done : per_send;
    for (int i = 0; i < n; ++i) {
      x[2 * i] = next_uniform(&state);
      x[2 * i + 1] = next_uniform(&state);
      y[i] = sinf(3.0f * x[2 * i]) * x[2 * i + 1];
    }
    if (sends == nan_at) {
      x[0] = NAN;
      y[n - 1] = INFINITY;
    }
    const int64_t x_shape[2] = {n, sends >= wide_after && wide_after >= 0 ? 3 : 2}, y_shape[2] = {n, 1};
    const fulgur_client_status sent = fulgur_client_send(client, x, x_shape, 2, y, y_shape, 2);
    if (sent != FULGUR_CLIENT_OK) {
      fprintf(stderr, "send (status %d): %s\n", (int)sent, fulgur_client_last_error());
      fulgur_client_destroy(client);
      return 1;
    }
  }
  int64_t sent = -1, dropped = -1, queued = -1;
  const fulgur_client_status status = fulgur_client_close(client, &sent, &dropped, &queued);
  printf("client %lld: sent %lld dropped %lld queued %lld\n", id, (long long)sent, (long long)dropped,
         (long long)queued);
  free(x);
  free(y);
  if (status != FULGUR_CLIENT_OK) fprintf(stderr, "close (status %d): %s\n", (int)status, fulgur_client_last_error());
  if (check_edges(client) != 0) return 4;
  return status == FULGUR_CLIENT_OK ? 0 : status == FULGUR_CLIENT_UNACKNOWLEDGED ? 5 : 1;
}
