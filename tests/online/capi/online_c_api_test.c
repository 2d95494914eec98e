/* The C API from a C program: create from YAML, inline training, predict,
 * checkpoint and reload, background mode, and the bad inputs (each one
 * status and one message). Writes only under a fresh temporary folder.
 * Exit code 0 when every check holds. */
#include <fulgur/online/fulgur_online.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int failures = 0;

#define CHECK(cond)                                                      \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond, \
              fulgur_online_last_error());                               \
      ++failures;                                                        \
    }                                                                    \
  } while (0)

static void write_text(const char* path, const char* text) {
  FILE* f = fopen(path, "w");
  if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
}

/* y = x0 * x1 + sin(x0) for x in [-1, 1]^2, from a fixed generator. */
static float next_uniform(unsigned* state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}
static void make_batch(unsigned* state, float* x, float* y, int n) {
  for (int i = 0; i < n; ++i) {
    x[2 * i] = next_uniform(state);
    x[2 * i + 1] = next_uniform(state);
    y[i] = x[2 * i] * x[2 * i + 1] + sinf(x[2 * i]);
  }
}

/* Pushes into a training handle until a call fails; the status it failed with. */
static void* push_until_refused(void* handle) {
  fulgur_online* h = (fulgur_online*)handle;
  unsigned state = 11;
  float x[64], y[32];
  const int64_t xs[2] = {32, 2}, ys[2] = {32, 1};
  fulgur_status status = FULGUR_OK;
  for (int i = 0; i < 1000000 && status == FULGUR_OK; ++i) {
    make_batch(&state, x, y, 32);
    status = fulgur_online_push(h, x, xs, 2, y, ys, 2);
  }
  return (void*)(intptr_t)status;
}

static double probe_error(fulgur_online* h, const float* x, const float* y, int n) {
  float out[64];
  const int64_t shape[2] = {n, 2};
  const fulgur_status status = fulgur_online_predict(h, x, shape, 2, out, n);
  if (status != FULGUR_OK && status != FULGUR_NOT_TRAINED) return 1e9;  /* NOT_TRAINED: outputs written */
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += (out[i] - y[i]) * (out[i] - y[i]);
  return sum / n;
}

int main(void) {
  char dir[] = "/tmp/fulgur-online-c-XXXXXX";
  if (mkdtemp(dir) == NULL) return 1;
  char config[512], bad[512], script[512], ckpt[512], logged[512], metrics[512];
  snprintf(config, sizeof config, "%s/config.yaml", dir);
  snprintf(bad, sizeof bad, "%s/bad.yaml", dir);
  snprintf(script, sizeof script, "%s/script.yaml", dir);
  snprintf(ckpt, sizeof ckpt, "%s/online.ckpt", dir);
  snprintf(logged, sizeof logged, "%s/logged.yaml", dir);
  snprintf(metrics, sizeof metrics, "%s/logs/fulgur_logs/version_0/metrics.csv", dir);
  write_text(config,
             "model: {type: mlp, layers: [2, 32, 1], activation: tanh}\n"
             "loss: mse\n"
             "optimizer: {type: adam, lr: 0.01}\n"
             "seed: 0\n"
             "online: {publish_every_n_steps: 10, num_threads: 1, max_steps: 400}\n"
             "stream: {capacity: 256, when_full: replay, batch_size: 32, seed: 1}\n"
             "trainer: {accelerator: cpu}\n");

  /* Bad inputs: a key that does not exist, a missing TorchScript file. */
  fulgur_online* h = NULL;
  write_text(bad, "model: {type: mlp, layerz: [2, 1]}\n");
  CHECK(fulgur_online_create(bad, &h) == FULGUR_CONFIG_ERROR);
  CHECK(h == NULL);
  CHECK(strstr(fulgur_online_last_error(), "bad.yaml: model.layerz: unknown key") != NULL);
  write_text(script, "model: {type: torchscript, path: /nonexistent/model.pt}\n");
  CHECK(fulgur_online_create(script, &h) == FULGUR_CONFIG_ERROR);
  CHECK(strstr(fulgur_online_last_error(), "TorchScript file '/nonexistent/model.pt' does not exist") != NULL);
  CHECK(fulgur_online_create("/nonexistent/config.yaml", &h) == FULGUR_CONFIG_ERROR);

  CHECK(fulgur_online_create(config, &h) == FULGUR_OK);
  if (h == NULL) return 1;

  unsigned state = 7;
  float probe_x[128], probe_y[64];
  make_batch(&state, probe_x, probe_y, 64);
  const double before = probe_error(h, probe_x, probe_y, 64);
  {
    float out[64];
    const int64_t shape[2] = {64, 2};
    CHECK(fulgur_online_predict(h, probe_x, shape, 2, out, 64) == FULGUR_NOT_TRAINED);
    CHECK(strstr(fulgur_online_last_error(), "no training step has been taken yet") != NULL);
  }
  CHECK(strlen(fulgur_online_version()) >= 5);
  /* The C ABI convention (docs/c-abi.md): the header's version is the library's, statuses in words. */
  CHECK(strcmp(fulgur_online_version(), FULGUR_VERSION) == 0);
  CHECK(fulgur_online_version_number() == FULGUR_VERSION_NUMBER);
  CHECK(strcmp(fulgur_online_strerror(FULGUR_INVALID_HANDLE), "invalid handle") == 0);
  CHECK(strcmp(fulgur_online_strerror((fulgur_status)99), "unknown status") == 0);
  double no_loss = 0.0;
  CHECK(fulgur_online_last_loss(h, &no_loss) == FULGUR_OK && no_loss != no_loss); /* NaN before any step */
  {
    /* Extents whose product overflows, and a foreign handle: one status each, no crash. */
    float one = 0.0F;
    const int64_t huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
    double l = 0.0;
    CHECK(fulgur_online_train_step(h, &one, huge, 2, &one, huge, 2, &l) == FULGUR_INVALID_ARGUMENT);
    CHECK(strstr(fulgur_online_last_error(), "hold more values than memory can") != NULL);
    /* The handle keeps its last failure for any thread; a success after does not clear it. */
    int64_t s = 0;
    CHECK(fulgur_online_global_step(h, &s) == FULGUR_OK && fulgur_online_last_error()[0] == '\0');
    CHECK(strstr(fulgur_online_errmsg(h), "fulgur_online_train_step: ") != NULL);
    CHECK(strstr(fulgur_online_errmsg(h), "hold more values than memory can") != NULL);
    fulgur_online* foreign = (fulgur_online*)&s;
    CHECK(fulgur_online_global_step(foreign, &s) == FULGUR_INVALID_HANDLE);
    CHECK(strstr(fulgur_online_errmsg(foreign), "not a live fulgur_online") != NULL);
  }

  /* Inline: 300 steps on fresh batches. */
  float x[64], y[32];
  const int64_t xs[2] = {32, 2}, ys[2] = {32, 1};
  double first = 0.0, loss = 0.0;
  for (int step = 0; step < 300; ++step) {
    make_batch(&state, x, y, 32);
    CHECK(fulgur_online_train_step(h, x, xs, 2, y, ys, 2, &loss) == FULGUR_OK);
    if (step == 0) first = loss;
  }
  int64_t steps = 0;
  CHECK(fulgur_online_global_step(h, &steps) == FULGUR_OK && steps == 300);
  const double after = probe_error(h, probe_x, probe_y, 64);
  printf("inline: loss %.5f -> %.5f, probe mse %.5f -> %.5f\n", first, loss, before, after);
  CHECK(after < before / 10);

  /* A NaN loss: one status, no step, training goes on. */
  float nan_x[64];
  for (int i = 0; i < 64; ++i) nan_x[i] = NAN;
  CHECK(fulgur_online_train_step(h, nan_x, xs, 2, y, ys, 2, &loss) == FULGUR_TRAINING_ERROR);
  CHECK(strstr(fulgur_online_last_error(), "the loss of step 301 is nan") != NULL);
  CHECK(fulgur_online_global_step(h, &steps) == FULGUR_OK && steps == 300);
  CHECK(probe_error(h, probe_x, probe_y, 64) == after);
  int stopped_on = -1;
  CHECK(fulgur_online_stop_signal(h, &stopped_on) == FULGUR_OK && stopped_on == 0);
  CHECK(fulgur_online_stop_signal(h, NULL) == FULGUR_INVALID_ARGUMENT);

  /* A shape unlike the first push's. */
  const int64_t wrong[2] = {16, 4}, wrong_targets[2] = {16, 1};
  CHECK(fulgur_online_start(h) == FULGUR_OK);
  CHECK(fulgur_online_pause(h) == FULGUR_OK);  /* returns with training between steps */
  CHECK(fulgur_online_push(h, x, xs, 2, y, ys, 2) == FULGUR_OK);
  CHECK(fulgur_online_resume(h) == FULGUR_OK);
  CHECK(fulgur_online_push(h, x, wrong, 2, y, wrong_targets, 2) == FULGUR_INVALID_ARGUMENT);
  CHECK(strstr(fulgur_online_last_error(), "differs from the first push's [2]") != NULL);
  /* The simulation keeps pushing until training reached max_steps (400). */
  while (fulgur_online_global_step(h, &steps) == FULGUR_OK && steps < 400) {
    make_batch(&state, x, y, 32);
    if (fulgur_online_push(h, x, xs, 2, y, ys, 2) != FULGUR_OK) break;
  }
  CHECK(fulgur_online_stop(h) == FULGUR_OK);
  CHECK(fulgur_online_global_step(h, &steps) == FULGUR_OK && steps == 400);
  const double trained = probe_error(h, probe_x, probe_y, 64);

  /* Checkpoint, then a fresh trainer from the same file predicts the same. */
  CHECK(fulgur_online_save_checkpoint(h, ckpt) == FULGUR_OK);
  fulgur_online* again = NULL;
  CHECK(fulgur_online_create(config, &again) == FULGUR_OK);
  CHECK(probe_error(again, probe_x, probe_y, 64) != trained);
  CHECK(fulgur_online_load_checkpoint(again, ckpt) == FULGUR_OK);
  CHECK(probe_error(again, probe_x, probe_y, 64) == trained);
  int64_t restored = 0;
  CHECK(fulgur_online_global_step(again, &restored) == FULGUR_OK && restored == steps);
  CHECK(fulgur_online_load_checkpoint(again, config) == FULGUR_CHECKPOINT_ERROR);

  /* Doubles: converted to the model's float32 on the way in and back out. */
  const int64_t probe_shape[2] = {64, 2};
  double probe_xd[128], predicted_d[64], xd[64], yd[32];
  float predicted_f[64];
  for (int i = 0; i < 128; ++i) probe_xd[i] = probe_x[i];
  for (int i = 0; i < 64; ++i) xd[i] = x[i];
  for (int i = 0; i < 32; ++i) yd[i] = y[i];
  CHECK(fulgur_online_predict(again, probe_x, probe_shape, 2, predicted_f, 64) == FULGUR_OK);
  CHECK(fulgur_online_predict_f64(again, probe_xd, probe_shape, 2, predicted_d, 64) == FULGUR_OK);
  double largest = 0.0;
  for (int i = 0; i < 64; ++i) largest = fmax(largest, fabs(predicted_d[i] - predicted_f[i]));
  CHECK(largest == 0.0);
  CHECK(fulgur_online_train_step_f64(again, xd, xs, 2, yd, ys, 2, &loss) == FULGUR_OK && isfinite(loss));
  CHECK(fulgur_online_global_step(again, &restored) == FULGUR_OK && restored == steps + 1);
  CHECK(fulgur_online_push_f64(again, xd, xs, 2, yd, ys, 2) == FULGUR_OK);
  CHECK(fulgur_online_push_f64(again, xd, wrong, 2, yd, wrong_targets, 2) == FULGUR_INVALID_ARGUMENT);
  CHECK(strstr(fulgur_online_last_error(), "fulgur_online_push_f64: ") != NULL);

  float small[4];
  CHECK(fulgur_online_predict(h, probe_x, xs, 2, small, 4) == FULGUR_INVALID_ARGUMENT);
  CHECK(fulgur_online_train_step(NULL, x, xs, 2, y, ys, 2, &loss) == FULGUR_INVALID_ARGUMENT);

  /* Publishing and the published step. */
  int64_t published = -1;
  CHECK(fulgur_online_publish(again) == FULGUR_OK);
  CHECK(fulgur_online_published_step(again, &published) == FULGUR_OK && published == steps + 1);
  double last = 0.0;
  CHECK(fulgur_online_last_loss(again, &last) == FULGUR_OK && isfinite(last));

  fulgur_online_destroy(again);
  /* A destroyed handle: a status, not a crash (and destroying it again is harmless). */
  CHECK(fulgur_online_global_step(again, &steps) == FULGUR_INVALID_HANDLE);
  CHECK(strstr(fulgur_online_last_error(), "not a live fulgur_online") != NULL);
  fulgur_online_destroy(again);
  fulgur_online_destroy(h);

  /* Background training's loss history: in log_dir's metrics.csv at every publish, while the handle lives. */
  {
    char text[1024];
    snprintf(text, sizeof text,
             "model: {type: mlp, layers: [2, 32, 1], activation: tanh}\n"
             "optimizer: {type: adam, lr: 0.01}\n"
             "online: {publish_every_n_steps: 10, num_threads: 1, max_steps: 40, log_dir: %s/logs}\n"
             "stream: {capacity: 256, when_full: replay, batch_size: 32, seed: 1}\n"
             "trainer: {accelerator: cpu, log_every_n_steps: 10}\n",
             dir);
    write_text(logged, text);
    fulgur_online* b = NULL;
    CHECK(fulgur_online_create(logged, &b) == FULGUR_OK);
    CHECK(fulgur_online_start(b) == FULGUR_OK);
    while (fulgur_online_global_step(b, &steps) == FULGUR_OK && steps < 40) {
      make_batch(&state, x, y, 32);
      if (fulgur_online_push(b, x, xs, 2, y, ys, 2) != FULGUR_OK) break;
    }
    CHECK(fulgur_online_stop(b) == FULGUR_OK);
    FILE* csv = fopen(metrics, "r");  /* before destroy: written during the run, not at its end */
    CHECK(csv != NULL);
    int rows = 0, finite = 0;
    char line[256];
    if (csv != NULL && fgets(line, sizeof line, csv) != NULL) {
      CHECK(strcmp(line, "epoch,step,train_loss\n") == 0);
      double step = 0.0, value = 0.0;  /* no epochs online: the first column is empty */
      while (fgets(line, sizeof line, csv) != NULL) {
        ++rows;
        if (sscanf(line, ",%lf,%lf", &step, &value) == 2 && isfinite(value) && step == 10.0 * rows) ++finite;
      }
    }
    if (csv != NULL) fclose(csv);
    printf("background: %d logged rows, %d at steps 10, 20, ... with a finite loss\n", rows, finite);
    CHECK(rows == 4 && finite == 4);
    fulgur_online_destroy(b);
  }

  /* A destroy while another thread pushes into background training: the push in flight keeps the
   * handle until it returns, the next one answers INVALID_HANDLE; nothing crashes (docs/c-abi.md). */
  {
    write_text(logged,
               "model: {type: mlp, layers: [2, 32, 1]}\n"
               "online: {publish_every_n_steps: 10, num_threads: 1, max_steps: -1}\n"
               "stream: {capacity: 256, when_full: replay, batch_size: 32, seed: 1}\n"
               "trainer: {accelerator: cpu}\n");
    for (int round = 0; round < 3; ++round) {
      fulgur_online* b = NULL;
      CHECK(fulgur_online_create(logged, &b) == FULGUR_OK);
      CHECK(fulgur_online_start(b) == FULGUR_OK);
      pthread_t pusher;
      CHECK(pthread_create(&pusher, NULL, push_until_refused, b) == 0);
      const struct timespec pause = {0, 20000000L * round};
      nanosleep(&pause, NULL);
      fulgur_online_destroy(b);
      void* result = NULL;
      pthread_join(pusher, &result);
      CHECK((fulgur_status)(intptr_t)result == FULGUR_INVALID_HANDLE);
    }
  }

  /* Every value of the file checked: one line naming the key, CONFIG_ERROR. */
  const char* bad_values[][2] = {
      {"optimizer: {type: adam, lr: 0.01, weight_decay: -1}\n", "optimizer.weight_decay: must be >= 0, got -1"},
      {"online: {num_threads: -4}\n", "online.num_threads: must be >= 0, got -4"},
      {"stream: {min_samples: -5}\n", "stream.min_samples: must be >= 0, got -5"},
      {"optimizer: {lr: 0}\n", "optimizer.lr: must be > 0, got 0"},
  };
  for (int i = 0; i < 4; ++i) {
    write_text(bad, bad_values[i][0]);
    fulgur_online* none = NULL;
    CHECK(fulgur_online_create(bad, &none) == FULGUR_CONFIG_ERROR);
    CHECK(strstr(fulgur_online_last_error(), bad_values[i][1]) != NULL);
    CHECK(strchr(fulgur_online_last_error(), '\n') == NULL);
  }
  unlink(config);
  unlink(bad);
  unlink(script);
  unlink(ckpt);
  char remove[600];
  snprintf(remove, sizeof remove, "rm -rf '%s'", dir);  /* the logs' folders too */
  CHECK(system(remove) == 0);
  printf("%s: %d failure(s)\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures == 0 ? 0 : 1;
}
