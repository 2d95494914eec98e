// The C API over OnlineTrainer (fulgur_online.h): every call catches what
// the C++ side throws and turns it into a status and a message
// (docs/c-abi.md). Compiled into libfulgur_online only: one handle registry
// per process.
#include <fulgur/online/fulgur_online.h>

#include <fulgur/core/c_error_message.hpp>
#include <fulgur/core/c_handle_registry.hpp>

#include <fulgur/online/online_config.hpp>
#include <fulgur/online/online_trainer.hpp>
#include <fulgur/strategies/mpi/mpi_refused_error.hpp>
#include <fulgur/engine/checkpoint/checkpoint_error.hpp>
#include <fulgur/version.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

struct fulgur_online {
  std::unique_ptr<fulgur::OnlineTrainer> trainer;
  fulgur::CErrorMessage error;  // fulgur_online_errmsg
};

namespace {

thread_local std::string last_error;

// Never destroyed: a handle the program never destroys is not freed at exit,
// when the statics it needs (LibTorch's) may be gone already.
fulgur::CHandleRegistry<fulgur_online>& handles = *new fulgur::CHandleRegistry<fulgur_online>;

constexpr const char* kNotLive =
    "the handle is not a live fulgur_online (destroyed already, or not made by fulgur_online_create)";

/// Thrown for a handle that is not live (FULGUR_INVALID_HANDLE).
struct InvalidHandle : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// Thrown by predict before any training (FULGUR_NOT_TRAINED, outputs written).
struct NotTrained : std::runtime_error {
  using std::runtime_error::runtime_error;
};

fulgur_status fail(fulgur_status status, const std::string& message) {
  last_error = message;
  return status;
}

/// Runs `body`, mapping each exception type to its status.
template <class Body>
fulgur_status run_mapped(const char* function, Body&& body) {
  try {
    body();
    last_error.clear();
    return FULGUR_OK;
  } catch (const InvalidHandle& e) {
    return fail(FULGUR_INVALID_HANDLE, fmt::format("{}: {}", function, e.what()));
  } catch (const NotTrained& e) {
    return fail(FULGUR_NOT_TRAINED, fmt::format("{}: {}", function, e.what()));
  } catch (const fulgur::StoppedError& e) {
    return fail(FULGUR_STOPPED, fmt::format("{}: {}", function, e.what()));
  } catch (const fulgur::CheckpointError& e) {
    return fail(FULGUR_CHECKPOINT_ERROR, fmt::format("{}: {}", function, e.what()));
  } catch (const fulgur::MpiRefusedError& e) {
    return fail(FULGUR_MPI_ERROR, fmt::format("{}: {}", function, e.what()));
  } catch (const std::invalid_argument& e) {
    return fail(FULGUR_INVALID_ARGUMENT, fmt::format("{}: {}", function, e.what()));
  } catch (const std::logic_error& e) {
    return fail(FULGUR_INVALID_ARGUMENT, fmt::format("{}: {}", function, e.what()));
  } catch (const c10::Error& e) {
    return fail(FULGUR_TRAINING_ERROR, fmt::format("{}: {}", function, e.what_without_backtrace()));
  } catch (const std::runtime_error& e) {
    return fail(FULGUR_TRAINING_ERROR, fmt::format("{}: {}", function, e.what()));
  } catch (const std::exception& e) {
    return fail(FULGUR_INTERNAL_ERROR, fmt::format("{}: {}", function, e.what()));
  } catch (...) {
    return fail(FULGUR_INTERNAL_ERROR, fmt::format("{}: an unknown error", function));
  }
}

/// Runs `body` on the trainer of a live `handle`, holding a reference to it
/// (a concurrent destroy frees it only after), and keeps a failure's
/// message on the handle too.
template <class Body>
fulgur_status guarded(const char* function, fulgur_online* handle, Body&& body) {
  std::shared_ptr<fulgur_online> live;
  const fulgur_status status = run_mapped(function, [&] {
    if (handle == nullptr) throw std::invalid_argument("the handle is null");
    live = handles.find(handle);
    if (live == nullptr) throw InvalidHandle(kNotLive);
    body(*live->trainer);
  });
  if (status != FULGUR_OK && live != nullptr) {
    try {
      live->error.set(last_error);
    } catch (...) {  // no memory for the copy: the thread's message stays
    }
  }
  return status;
}

// The caller's array as a float32 tensor: a view of a float array (push and
// train_step copy it), a converted copy of a double one.
template <typename T>
torch::Tensor view(const char* what, const T* data, const int64_t* shape, int ndim) {
  if (data == nullptr || shape == nullptr || ndim < 1) {
    throw std::invalid_argument(fmt::format("{}: needs data, a shape and ndim >= 1 (got ndim {})", what, ndim));
  }
  std::vector<int64_t> sizes(shape, shape + ndim);
  int64_t count = 1;
  for (int64_t s : sizes) {
    if (s < 1) throw std::invalid_argument(fmt::format("{}: every extent must be >= 1, got {}", what, s));
    // Extents whose product overflows describe no array the caller can hold.
    if (__builtin_mul_overflow(count, s, &count) ||
        count > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(sizeof(T))) {
      throw std::invalid_argument(fmt::format("{}: the extents [{}] hold more values than memory can", what,
                                              fmt::join(sizes, ", ")));
    }
  }
  return torch::from_blob(const_cast<T*>(data), sizes, c10::CppTypeToScalarType<T>::value).to(torch::kFloat32);
}

template <typename T>
fulgur_status train_step(const char* name, fulgur_online* handle, const T* inputs, const int64_t* input_shape,
                         int input_ndim, const T* targets, const int64_t* target_shape, int target_ndim,
                         double* loss) {
  return guarded(name, handle, [&](fulgur::OnlineTrainer& trainer) {
    const double value = trainer.train_step(view("inputs", inputs, input_shape, input_ndim),
                                            view("targets", targets, target_shape, target_ndim));
    if (loss != nullptr) *loss = value;
  });
}

template <typename T>
fulgur_status push(const char* name, fulgur_online* handle, const T* inputs, const int64_t* input_shape,
                   int input_ndim, const T* targets, const int64_t* target_shape, int target_ndim) {
  return guarded(name, handle, [&](fulgur::OnlineTrainer& trainer) {
    trainer.push(view("inputs", inputs, input_shape, input_ndim), view("targets", targets, target_shape, target_ndim));
  });
}

template <typename T>
fulgur_status predict(const char* name, fulgur_online* handle, const T* inputs, const int64_t* input_shape,
                      int input_ndim, T* outputs, int64_t output_count) {
  return guarded(name, handle, [&](fulgur::OnlineTrainer& trainer) {
    if (outputs == nullptr) throw std::invalid_argument("outputs must not be null");
    const torch::Tensor y =
        trainer.predict(view("inputs", inputs, input_shape, input_ndim)).to(c10::CppTypeToScalarType<T>::value).contiguous();
    if (y.numel() != output_count) {
      throw std::invalid_argument(
          fmt::format("the prediction has {} values but output_count is {}", y.numel(), output_count));
    }
    std::memcpy(outputs, y.data_ptr<T>(), static_cast<size_t>(output_count) * sizeof(T));
    if (trainer.published_step() == 0 && trainer.global_step() == 0) {
      throw NotTrained("no training step has been taken yet: the outputs are the untrained model's");
    }
  });
}

/// fulgur_online_create and fulgur_online_create_comm (`function` names the caller in errors).
fulgur_status create_handle(const char* config_path, std::optional<int64_t> communicator, fulgur_online** out,
                            const char* function);

}  // namespace

extern "C" {

fulgur_status fulgur_online_create(const char* config_path, fulgur_online** out) {
  return create_handle(config_path, std::nullopt, out, "fulgur_online_create");
}

fulgur_status fulgur_online_create_comm(const char* config_path, int comm, fulgur_online** out) {
  return create_handle(config_path, comm, out, "fulgur_online_create_comm");
}

}  // extern "C"

namespace {

fulgur_status create_handle(const char* config_path, std::optional<int64_t> communicator, fulgur_online** out,
                            const char* function) {
  if (out != nullptr) *out = nullptr;
  if (config_path == nullptr || out == nullptr) {
    return fail(FULGUR_INVALID_ARGUMENT, fmt::format("{}: config_path and out must not be null", function));
  }
  try {
    const fulgur::OnlineConfig config = fulgur::OnlineConfig::from_yaml_file(config_path);
    auto handle = std::make_shared<fulgur_online>();
    try {
      handle->trainer = config.make_trainer(communicator);
    } catch (const fulgur::MpiRefusedError&) {
      throw;
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("{}: {}", config_path, e.what()));
    }
    *out = handles.add(std::move(handle));
    last_error.clear();
    return FULGUR_OK;
  } catch (const fulgur::MpiRefusedError& e) {
    return fail(FULGUR_MPI_ERROR, fmt::format("{}: {}: {}", function, config_path, e.what()));
  } catch (const std::invalid_argument& e) {
    return fail(FULGUR_CONFIG_ERROR, fmt::format("{}: {}", function, e.what()));
  } catch (const c10::Error& e) {  // a value LibTorch refused while building the model or optimizer
    return fail(FULGUR_CONFIG_ERROR,
                fmt::format("{}: {}: {}", function, config_path, e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return fail(FULGUR_INTERNAL_ERROR, fmt::format("{}: {}: {}", function, config_path, e.what()));
  } catch (...) {
    return fail(FULGUR_INTERNAL_ERROR, fmt::format("{}: an unknown error", function));
  }
}

}  // namespace

extern "C" {

void fulgur_online_destroy(fulgur_online* handle) {
  try {
    // Destroyed already, or not ours: nothing to free (never a double free).
    // Freed here, or by the last call on another thread that still holds it.
    handles.remove(handle);
  } catch (...) {  // never across the C boundary
  }
}

const char* fulgur_online_version(void) { return FULGUR_VERSION; }

int fulgur_online_version_number(void) { return FULGUR_VERSION_NUMBER; }

const char* fulgur_online_strerror(fulgur_status status) {
  switch (status) {
    case FULGUR_OK: return "no error";
    case FULGUR_INVALID_ARGUMENT: return "invalid argument";
    case FULGUR_CONFIG_ERROR: return "configuration error";
    case FULGUR_TRAINING_ERROR: return "training error";
    case FULGUR_CHECKPOINT_ERROR: return "checkpoint error";
    case FULGUR_INTERNAL_ERROR: return "internal error";
    case FULGUR_STOPPED: return "stopped by a signal";
    case FULGUR_INVALID_HANDLE: return "invalid handle";
    case FULGUR_NOT_TRAINED: return "not trained yet";
    case FULGUR_MPI_ERROR: return "MPI error";
  }
  return "unknown status";
}

const char* fulgur_online_errmsg(const fulgur_online* handle) {
  try {
    return handles.message_of(handle, kNotLive);
  } catch (...) {  // never across the C boundary
    return "fulgur_online_errmsg: no memory for the message";
  }
}

fulgur_status fulgur_online_publish(fulgur_online* handle) {
  return guarded("fulgur_online_publish", handle, [](fulgur::OnlineTrainer& trainer) { trainer.publish(); });
}

fulgur_status fulgur_online_published_step(fulgur_online* handle, int64_t* step) {
  return guarded("fulgur_online_published_step", handle, [&](fulgur::OnlineTrainer& trainer) {
    if (step == nullptr) throw std::invalid_argument("step must not be null");
    *step = trainer.published_step();
  });
}

fulgur_status fulgur_online_pause(fulgur_online* handle) {
  return guarded("fulgur_online_pause", handle, [](fulgur::OnlineTrainer& trainer) { trainer.pause(); });
}

fulgur_status fulgur_online_resume(fulgur_online* handle) {
  return guarded("fulgur_online_resume", handle, [](fulgur::OnlineTrainer& trainer) { trainer.resume(); });
}

fulgur_status fulgur_online_last_loss(fulgur_online* handle, double* loss) {
  return guarded("fulgur_online_last_loss", handle, [&](fulgur::OnlineTrainer& trainer) {
    if (loss == nullptr) throw std::invalid_argument("loss must not be null");
    *loss = trainer.last_loss();
  });
}

fulgur_status fulgur_online_train_step(fulgur_online* handle, const float* inputs, const int64_t* input_shape,
                                       int input_ndim, const float* targets, const int64_t* target_shape,
                                       int target_ndim, double* loss) {
  return train_step("fulgur_online_train_step", handle, inputs, input_shape, input_ndim, targets, target_shape,
                    target_ndim, loss);
}

fulgur_status fulgur_online_train_step_f64(fulgur_online* handle, const double* inputs, const int64_t* input_shape,
                                           int input_ndim, const double* targets, const int64_t* target_shape,
                                           int target_ndim, double* loss) {
  return train_step("fulgur_online_train_step_f64", handle, inputs, input_shape, input_ndim, targets, target_shape,
                    target_ndim, loss);
}

fulgur_status fulgur_online_start(fulgur_online* handle) {
  return guarded("fulgur_online_start", handle, [](fulgur::OnlineTrainer& trainer) { trainer.start(); });
}

fulgur_status fulgur_online_push(fulgur_online* handle, const float* inputs, const int64_t* input_shape, int input_ndim,
                                 const float* targets, const int64_t* target_shape, int target_ndim) {
  return push("fulgur_online_push", handle, inputs, input_shape, input_ndim, targets, target_shape, target_ndim);
}

fulgur_status fulgur_online_push_f64(fulgur_online* handle, const double* inputs, const int64_t* input_shape,
                                     int input_ndim, const double* targets, const int64_t* target_shape,
                                     int target_ndim) {
  return push("fulgur_online_push_f64", handle, inputs, input_shape, input_ndim, targets, target_shape, target_ndim);
}

fulgur_status fulgur_online_stop(fulgur_online* handle) {
  return guarded("fulgur_online_stop", handle, [](fulgur::OnlineTrainer& trainer) { trainer.stop(); });
}

fulgur_status fulgur_online_predict(fulgur_online* handle, const float* inputs, const int64_t* input_shape,
                                    int input_ndim, float* outputs, int64_t output_count) {
  return predict("fulgur_online_predict", handle, inputs, input_shape, input_ndim, outputs, output_count);
}

fulgur_status fulgur_online_predict_f64(fulgur_online* handle, const double* inputs, const int64_t* input_shape,
                                        int input_ndim, double* outputs, int64_t output_count) {
  return predict("fulgur_online_predict_f64", handle, inputs, input_shape, input_ndim, outputs, output_count);
}

fulgur_status fulgur_online_save_checkpoint(fulgur_online* handle, const char* path) {
  return guarded("fulgur_online_save_checkpoint", handle, [&](fulgur::OnlineTrainer& trainer) {
    if (path == nullptr) throw std::invalid_argument("path must not be null");
    trainer.save_checkpoint(path);
  });
}

fulgur_status fulgur_online_load_checkpoint(fulgur_online* handle, const char* path) {
  return guarded("fulgur_online_load_checkpoint", handle, [&](fulgur::OnlineTrainer& trainer) {
    if (path == nullptr) throw std::invalid_argument("path must not be null");
    trainer.load_checkpoint(path);
  });
}

fulgur_status fulgur_online_global_step(fulgur_online* handle, int64_t* step) {
  return guarded("fulgur_online_global_step", handle, [&](fulgur::OnlineTrainer& trainer) {
    if (step == nullptr) throw std::invalid_argument("step must not be null");
    *step = trainer.global_step();
  });
}

fulgur_status fulgur_online_stop_signal(fulgur_online* handle, int* signal) {
  return guarded("fulgur_online_stop_signal", handle, [&](fulgur::OnlineTrainer& trainer) {
    if (signal == nullptr) throw std::invalid_argument("signal must not be null");
    *signal = trainer.stop_signal();
  });
}

const char* fulgur_online_last_error(void) { return last_error.c_str(); }

}  // extern "C"
