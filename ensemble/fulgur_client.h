/* The ensemble client's C API (libfulgur_client, no LibTorch): a simulation
 * streams samples to a fulgur training job (fulgur_serve, EnsembleServer)
 * over the network. See docs/ensemble.md.
 *
 *   fulgur_client* c = NULL;
 *   fulgur_client_connect("run/ensemble.rendezvous", task_id, NULL, &c);
 *   for (step ...) fulgur_client_send(c, x, x_shape, 2, y, y_shape, 2);   // shapes: the sample count first
 *   int64_t sent, dropped, queued;
 *   fulgur_client_close(c, &sent, &dropped, &queued);    // drains, says goodbye, disconnects
 *   fulgur_client_destroy(c);                            // frees the handle
 *
 * Each call returns a status; fulgur_client_last_error() holds the calling
 * thread's last message, fulgur_client_errmsg(c) the handle's last failure,
 * fulgur_client_strerror(status) the status in words. One thread at a time
 * may use a handle; any call may race fulgur_client_destroy on another
 * thread (it finds the handle, freed when the call returns, or answers
 * FULGUR_CLIENT_INVALID_HANDLE). A closed handle answers FULGUR_CLIENT_CLOSED
 * until it is destroyed; a destroyed one FULGUR_CLIENT_INVALID_HANDLE
 * (nothing is touched). The conventions it shares with libfulgur_online:
 * docs/c-abi.md. */
#ifndef FULGUR_CLIENT_H
#define FULGUR_CLIENT_H

#include <fulgur/version.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fulgur_client fulgur_client;

typedef enum {
  FULGUR_CLIENT_OK = 0,
  FULGUR_CLIENT_INVALID_ARGUMENT = 1, /* a null pointer, a bad shape or option */
  FULGUR_CLIENT_CONNECT_ERROR = 2,    /* no rendezvous file in time, one that cannot be read, or a server
                                         that refused its key (another run's file) */
  FULGUR_CLIENT_CLOSED = 3,           /* send or close after close: nothing is done */
  FULGUR_CLIENT_INTERNAL_ERROR = 4,
  FULGUR_CLIENT_UNACKNOWLEDGED = 5,   /* close gave up (close_timeout_s) before every server rank acknowledged
                                         the samples sent to it and the goodbye: the counts say what is left */
  FULGUR_CLIENT_INVALID_HANDLE = 6,   /* a destroyed handle, or a pointer fulgur_client_connect did not make */
  FULGUR_CLIENT_VERSION_ERROR = 7     /* a server rank speaks another protocol version (a client library of
                                         another fulgur release): the client stopped */
} fulgur_client_status;

typedef enum {
  FULGUR_CLIENT_BLOCK = 0,      /* a full queue: send waits for room */
  FULGUR_CLIENT_DROP_OLDEST = 1 /* a full queue: its oldest message is dropped and counted */
} fulgur_client_policy;

/* Carries its own size, so that the library reads only what the caller's
 * header declared: start from fulgur_client_default_options() (which sets
 * struct_size), then change fields. A struct from an older header (shorter)
 * gets the defaults for the fields it lacks; one from a newer header
 * (longer) is accepted when the fields this library does not know are zero. */
typedef struct {
  size_t struct_size;        /* sizeof(fulgur_client_options) of the caller's header */
  int64_t queue_capacity;    /* messages (send calls) queued at most; default 64 */
  int32_t when_full;         /* a fulgur_client_policy; default FULGUR_CLIENT_BLOCK */
  double connect_timeout_s;  /* waiting for the rendezvous file; default 60 */
  double close_timeout_s;    /* waiting for the queue to go out at close; default 60 */
  int64_t ranks;             /* server ranks this client sends to, from client_id mod M on; 0 (default): all */
} fulgur_client_options;

/* The defaults above, with struct_size set. */
fulgur_client_options fulgur_client_default_options(void);

/* The library's version, "MAJOR.MINOR.PATCH", and as FULGUR_VERSION_NUMBER
 * counts it (<fulgur/version.h>): compare with the header's macro to see
 * which library a program runs against. */
const char* fulgur_client_version(void);
int fulgur_client_version_number(void);

/* A status in words ("closed"); "unknown status" for a number that is none.
 * A static string. */
const char* fulgur_client_strerror(fulgur_client_status status);

/* Reads the rendezvous file (waiting for it) and connects to every server
 * rank; `options` may be NULL (the defaults). `client_id` names this client
 * in the server's accounting (a job array's task id, say). */
fulgur_client_status fulgur_client_connect(const char* rendezvous, int64_t client_id,
                                           const fulgur_client_options* options, fulgur_client** out);

/* Queues x_shape[0] samples, copied before it returns (C order). */
fulgur_client_status fulgur_client_send(fulgur_client* client, const float* x, const int64_t* x_shape, int x_ndim,
                                        const float* y, const int64_t* y_shape, int y_ndim);
fulgur_client_status fulgur_client_send_f64(fulgur_client* client, const double* x, const int64_t* x_shape,
                                            int x_ndim, const double* y, const int64_t* y_shape, int y_ndim);

/* Waits for the queue to go out and be acknowledged (close_timeout_s), tells
 * the server ranks what they were sent (again until each acknowledges) and
 * disconnects. The handle stays valid until fulgur_client_destroy: later
 * sends and closes answer FULGUR_CLIENT_CLOSED and touch nothing. The
 * counts (each may be NULL), written whenever the handle was open: samples
 * sent, dropped by DROP_OLDEST, left queued. FULGUR_CLIENT_OK only when
 * everything was sent and acknowledged, goodbyes included;
 * FULGUR_CLIENT_UNACKNOWLEDGED when close gave up first. */
fulgur_client_status fulgur_client_close(fulgur_client* client, int64_t* sent, int64_t* dropped, int64_t* queued);

/* Frees the handle, closing it first if it is open (its status dropped).
 * NULL, or a handle destroyed already, is harmless. A call that runs on
 * another thread meanwhile keeps the handle until it returns. */
void fulgur_client_destroy(fulgur_client* client);

/* The calling thread's last error message ("" after a success). */
const char* fulgur_client_last_error(void);
/* The message of the last call on `client` that failed ("" if none has). A
 * copy that stays valid until this thread's next fulgur_client_errmsg; a
 * handle that is not live gives a message saying so. */
const char* fulgur_client_errmsg(const fulgur_client* client);

#ifdef __cplusplus
}
#endif

#endif /* FULGUR_CLIENT_H */
