/* fulgur's online trainer for C and Fortran programs (a simulation that owns
 * its loop). Every function returns a status; on failure
 * fulgur_online_last_error() (this thread's) and fulgur_online_errmsg(handle)
 * (the handle's) say why, in one line naming the file, key or value, and
 * fulgur_online_strerror(status) names the status. Nothing throws across
 * this boundary and nothing calls exit(). The conventions it shares with
 * libfulgur_client: docs/c-abi.md.
 * Arrays are float32 in C order; a shape lists the sample count first. */
#ifndef FULGUR_ONLINE_H
#define FULGUR_ONLINE_H

#include <fulgur/version.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  FULGUR_OK = 0,
  /* A bad argument: a null pointer, a shape or dtype unlike the first push's;
   * or a call the trainer's state does not allow (a push into a full
   * blocking stream before start, which would wait forever). */
  FULGUR_INVALID_ARGUMENT = 1,
  /* The configuration file: missing, not YAML, an unknown key, a bad value,
   * a missing TorchScript file. */
  FULGUR_CONFIG_ERROR = 2,
  /* Training failed (a NaN loss, a rank that died); what was trained before stays. */
  FULGUR_TRAINING_ERROR = 3,
  /* A checkpoint could not be written or read. */
  FULGUR_CHECKPOINT_ERROR = 4,
  /* Anything else. */
  FULGUR_INTERNAL_ERROR = 5,
  /* Training stopped on a signal (SIGTERM, SIGINT, SIGUSR1) and saved its
   * checkpoint: exit with 128 + fulgur_online_stop_signal(); a restart resumes.
   * Also a push that waited for room when training stopped. */
  FULGUR_STOPPED = 6,
  /* The handle is not a live one: destroyed already, or never made by
   * fulgur_online_create. Nothing was touched. */
  FULGUR_INVALID_HANDLE = 7,
  /* predict before any training step (and no checkpoint loaded): the outputs
   * are written, from the untrained model. */
  FULGUR_NOT_TRAINED = 8,
  /* MPI refused: the communicator is MPI_COMM_NULL (this rank is outside it)
   * or not a valid handle, MPI is not initialised or finalised already, it
   * numbers the ranks otherwise than the run expects, or its thread level is
   * too low (MPI_THREAD_SERIALIZED for inline training, MPI_THREAD_MULTIPLE
   * for fulgur_online_start beside the program's own MPI calls). */
  FULGUR_MPI_ERROR = 9
} fulgur_status;

/* Thread safety: fulgur_online_push and fulgur_online_predict may be called
 * from any thread while background training runs (predict reads the last
 * published weights); every other call on one handle must come from one
 * thread at a time. Any call may race fulgur_online_destroy on another
 * thread: it either finds the handle (which is freed when the last such
 * call returns) or answers FULGUR_INVALID_HANDLE. fulgur_online_last_error
 * is per thread, fulgur_online_errmsg per handle. Handles are checked: a
 * destroyed or foreign one gives FULGUR_INVALID_HANDLE. */

/* The library's version, "MAJOR.MINOR.PATCH", and as FULGUR_VERSION_NUMBER
 * counts it (<fulgur/version.h>: MAJOR * 1000000 + MINOR * 1000 + PATCH):
 * compare with the header's FULGUR_VERSION_NUMBER to see which library a
 * program runs against. */
const char* fulgur_online_version(void);
int fulgur_online_version_number(void);

/* A status in words ("invalid handle"); "unknown status" for a number that
 * is none. A static string. */
const char* fulgur_online_strerror(fulgur_status status);

typedef struct fulgur_online fulgur_online;

/* Builds the model, optimizer and trainer a YAML file describes
 * (docs/online.md, "The configuration file"). */
fulgur_status fulgur_online_create(const char* config_path, fulgur_online** out);
/* The same, trained by the ranks of the program's MPI communicator `comm`,
 * given as its Fortran handle: MPI_Comm_c2f(comm) in C (an MPI_Fint), the
 * integer handle in Fortran. Any subset of MPI_COMM_WORLD; the program has
 * initialised MPI (MPI_Init_thread, MPI_THREAD_SERIALIZED or more); every
 * rank of `comm` calls this, no other rank does (one that holds
 * MPI_COMM_NULL, or a handle that is not a communicator, gets
 * FULGUR_MPI_ERROR and nothing waits for it).
 * The collectives go over `comm` (process_group_backend mpi); no rendezvous
 * variable is needed. */
fulgur_status fulgur_online_create_comm(const char* config_path, int comm, fulgur_online** out);
/* Stops background training and frees everything; null, or a handle destroyed
 * already, is harmless. A call that runs on another thread meanwhile keeps
 * the handle until it returns; calls made after answer FULGUR_INVALID_HANDLE. */
void fulgur_online_destroy(fulgur_online* handle);

/* Inline mode: one optimizer step on a batch; the loss goes to *loss. */
fulgur_status fulgur_online_train_step(fulgur_online* handle, const float* inputs, const int64_t* input_shape,
                                       int input_ndim, const float* targets, const int64_t* target_shape,
                                       int target_ndim, double* loss);
/* Background mode: start training on its own thread, push samples (copied
 * before it returns), stop (waits; reports the error that stopped training). */
fulgur_status fulgur_online_start(fulgur_online* handle);
fulgur_status fulgur_online_push(fulgur_online* handle, const float* inputs, const int64_t* input_shape, int input_ndim,
                                 const float* targets, const int64_t* target_shape, int target_ndim);
fulgur_status fulgur_online_stop(fulgur_online* handle);

/* The published model on `inputs`; writes `output_count` floats to
 * `outputs` (FULGUR_INVALID_ARGUMENT when the prediction has another size). */
fulgur_status fulgur_online_predict(fulgur_online* handle, const float* inputs, const int64_t* input_shape,
                                    int input_ndim, float* outputs, int64_t output_count);

/* The same three for a program that holds doubles: the values are
 * converted to the model's float32 on the way in, and back on the way out. */
fulgur_status fulgur_online_train_step_f64(fulgur_online* handle, const double* inputs, const int64_t* input_shape,
                                           int input_ndim, const double* targets, const int64_t* target_shape,
                                           int target_ndim, double* loss);
fulgur_status fulgur_online_push_f64(fulgur_online* handle, const double* inputs, const int64_t* input_shape,
                                     int input_ndim, const double* targets, const int64_t* target_shape,
                                     int target_ndim);
fulgur_status fulgur_online_predict_f64(fulgur_online* handle, const double* inputs, const int64_t* input_shape,
                                        int input_ndim, double* outputs, int64_t output_count);

fulgur_status fulgur_online_save_checkpoint(fulgur_online* handle, const char* path);
fulgur_status fulgur_online_load_checkpoint(fulgur_online* handle, const char* path);
/* Optimizer steps taken. */
fulgur_status fulgur_online_global_step(fulgur_online* handle, int64_t* step);
/* The signal that stopped training (0: none): see FULGUR_STOPPED. */
fulgur_status fulgur_online_stop_signal(fulgur_online* handle, int* signal);
/* Publishes the training weights for predict now (inline mode, or after stop),
 * and the step of the weights predict uses. */
fulgur_status fulgur_online_publish(fulgur_online* handle);
fulgur_status fulgur_online_published_step(fulgur_online* handle, int64_t* step);
/* Background training takes no step between pause (which returns once the
 * training thread is between steps) and resume; pushes still fill the stream. */
fulgur_status fulgur_online_pause(fulgur_online* handle);
fulgur_status fulgur_online_resume(fulgur_online* handle);
/* The loss of the last step (NaN before any): background training's progress. */
fulgur_status fulgur_online_last_loss(fulgur_online* handle, double* loss);

/* The message of this thread's last call ("" after a success). */
const char* fulgur_online_last_error(void);
/* The message of the last call on `handle` that failed, from any thread (""
 * if none has): read it after a failed call whose thread you cannot ask. A
 * copy that stays valid until this thread's next fulgur_online_errmsg; a
 * handle that is not live gives a message saying so. */
const char* fulgur_online_errmsg(const fulgur_online* handle);

#ifdef __cplusplus
}
#endif

#endif /* FULGUR_ONLINE_H */
