/* The C API on the program's own MPI communicator, from a C program that
 * began MPI itself, as a simulation does. Run under mpirun with 3 ranks:
 * ranks 0 and 1 form the communicator and train inline (fulgur_online_
 * create_comm), each on its half of every batch; rank 2 holds
 * MPI_COMM_NULL, is refused with one status and one line (as is a handle
 * that is no communicator), and steps its own loop. Checks: both trainers
 * took every step, and their models give the same predictions (the weights
 * agree); background training is refused below MPI_THREAD_MULTIPLE. Each rank prints
 * "rank R: ok"; exit code 0 when every check holds. */
#include <fulgur/online/fulgur_online.h>

#include <mpi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures = 0;
static int rank = 0;

#define CHECK(cond)                                                                                      \
  do {                                                                                                   \
    if (!(cond)) {                                                                                       \
      fprintf(stderr, "rank %d: %s:%d: CHECK(%s) failed; last error: %s\n", rank, __FILE__, __LINE__, #cond, \
              fulgur_online_last_error());                                                               \
      ++failures;                                                                                        \
    }                                                                                                    \
  } while (0)

static float next_uniform(unsigned* state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}

int main(int argc, char** argv) {
  int provided = 0, size = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 3) {
    fprintf(stderr, "run with mpirun -np 3\n");
    MPI_Finalize();
    return 2;
  }
  /* Rank 0 writes the configuration; everyone reads it. */
  char config[64] = "";
  if (rank == 0) {
    char dir[] = "/tmp/fulgur-online-comm-XXXXXX";
    if (mkdtemp(dir) == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    snprintf(config, sizeof config, "%s/config.yaml", dir);
    FILE* f = fopen(config, "w");
    fputs("model: {type: mlp, layers: [2, 16, 1], activation: tanh}\n"
          "loss: mse\n"
          "optimizer: {type: sgd, lr: 0.05}\n"
          "seed: 0\n"
          "online: {num_threads: 1}\n"
          "trainer: {accelerator: cpu, strategy: ddp}\n",
          f);
    fclose(f);
  }
  MPI_Bcast(config, sizeof config, MPI_CHAR, 0, MPI_COMM_WORLD);

  MPI_Comm fluid = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &fluid);
  fulgur_online* h = NULL;
  unsigned state = 5; /* the same global stream on every rank */
  float x[16 * 2], y[16];
  if (fluid == MPI_COMM_NULL) {
    CHECK(fulgur_online_create_comm(config, MPI_Comm_c2f(MPI_COMM_NULL), &h) == FULGUR_MPI_ERROR);
    CHECK(h == NULL);
    CHECK(strstr(fulgur_online_last_error(), "this process is outside the communicator (MPI_COMM_NULL)") != NULL);
    /* A number that is no communicator: one line, not an abort of the job inside MPI. */
    CHECK(fulgur_online_create_comm(config, 123456, &h) == FULGUR_MPI_ERROR);
    CHECK(h == NULL);
    CHECK(strstr(fulgur_online_last_error(), "mpi_communicator 123456 is not a valid MPI communicator handle") != NULL);
    /* A negative number is MPI's to judge (MPICH's handles of split communicators are negative as MPI_Fint). */
    CHECK(fulgur_online_create_comm(config, -5, &h) == FULGUR_MPI_ERROR);
    CHECK(strstr(fulgur_online_last_error(), "mpi_communicator -5 is not a valid MPI communicator handle") != NULL);
    double own = 0.0; /* the simulation's own loop goes on: nothing waits for fulgur */
    for (int step = 0; step < 20; ++step) own += next_uniform(&state);
    CHECK(isfinite(own));
  } else {
    CHECK(fulgur_online_create_comm(config, MPI_Comm_c2f(fluid), &h) == FULGUR_OK);
    if (h == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    for (int step = 0; step < 20; ++step) {
      for (int i = 0; i < 16; ++i) {
        x[2 * i] = next_uniform(&state);
        x[2 * i + 1] = next_uniform(&state);
        y[i] = x[2 * i] * x[2 * i + 1] + sinf(x[2 * i]);
      }
      /* This rank's half of the global batch of 16. */
      const int64_t xs[2] = {8, 2}, ys[2] = {8, 1};
      double loss = 0.0;
      CHECK(fulgur_online_train_step(h, x + rank * 16, xs, 2, y + rank * 8, ys, 2, &loss) == FULGUR_OK);
      CHECK(isfinite(loss));
    }
    int64_t steps = 0;
    CHECK(fulgur_online_global_step(h, &steps) == FULGUR_OK && steps == 20);
    /* Background training beside this program's own MPI calls needs MPI_THREAD_MULTIPLE: refused, nothing started. */
    CHECK(fulgur_online_start(h) == FULGUR_MPI_ERROR);
    CHECK(strstr(fulgur_online_last_error(), "needs MPI_THREAD_MULTIPLE") != NULL &&
          strstr(fulgur_online_last_error(), "MPI_THREAD_SERIALIZED") != NULL);
    /* The two ranks' models agree: the same predictions on the same inputs. */
    float out[16], largest[16];
    const int64_t shape[2] = {16, 2};
    CHECK(fulgur_online_predict(h, x, shape, 2, out, 16) == FULGUR_OK);
    MPI_Allreduce(out, largest, 16, MPI_FLOAT, MPI_MAX, fluid);
    for (int i = 0; i < 16; ++i) CHECK(fabsf(largest[i] - out[i]) < 1e-6f);
    fulgur_online_destroy(h);
    MPI_Comm_free(&fluid);
  }
  const int world = MPI_Comm_c2f(MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD); /* every rank's runs are over before rank 0 removes the config */
  MPI_Finalize();
  if (failures == 0) printf("rank %d: ok\n", rank);
  if (rank == 0) {
    /* After MPI_Finalize no MPI call is allowed: a communicator then is one line, not a crash inside MPI
     * (rank 0 only: the config it reads is removed next). */
    CHECK(fulgur_online_create_comm(config, world, &h) == FULGUR_MPI_ERROR);
    CHECK(h == NULL);
    CHECK(strstr(fulgur_online_last_error(), "MPI was finalised already") != NULL);
    if (failures == 0) printf("rank 0: after MPI_Finalize: refused\n");
    unlink(config);
    char* slash = strrchr(config, '/');
    if (slash != NULL) {
      *slash = '\0';
      rmdir(config);
    }
  }
  return failures == 0 ? 0 : 1;
}
