// The C API over EnsembleClient: every exception becomes a status and one
// line in last_error and on the handle (docs/c-abi.md).
#include <fulgur/ensemble/fulgur_client.h>

#include <fulgur/core/c_error_message.hpp>
#include <fulgur/core/c_handle_registry.hpp>
#include <fulgur/ensemble/ensemble_client.hpp>
#include <fulgur/ensemble/ensemble_refused_error.hpp>
#include <fulgur/ensemble/ensemble_version_error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

struct fulgur_client {
  std::mutex mutex;  // guards `client`: close takes it out
  /// Null once closed: the handle then only answers FULGUR_CLIENT_CLOSED.
  std::shared_ptr<fulgur::EnsembleClient> client;
  fulgur::CErrorMessage error;  // fulgur_client_errmsg
};

namespace {

thread_local std::string last_error;

// Never destroyed: a handle the program never destroys is not freed at exit,
// when the statics it needs may be gone already (and a close would wait).
fulgur::CHandleRegistry<fulgur_client>& handles = *new fulgur::CHandleRegistry<fulgur_client>;

constexpr const char* kNotLive =
    "the handle is not a live fulgur_client (destroyed already, or not made by fulgur_client_connect)";

/// Thrown for a pointer that is not a live handle (FULGUR_CLIENT_INVALID_HANDLE).
struct InvalidHandle : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Thrown for a call on a closed handle (FULGUR_CLIENT_CLOSED).
struct Closed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Thrown by connect for what is not an option (FULGUR_CLIENT_CONNECT_ERROR).
struct ConnectFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Thrown by close when not everything was acknowledged (FULGUR_CLIENT_UNACKNOWLEDGED).
struct Unacknowledged : std::runtime_error {
  using std::runtime_error::runtime_error;
};

fulgur_client_status fail(fulgur_client_status status, const std::string& message) {
  last_error = message;
  return status;
}

/// Runs `call`, mapping each exception type to its status; nothing crosses the boundary.
template <class Call>
fulgur_client_status run_mapped(const char* function, Call&& call) {
  try {
    call();
    last_error.clear();
    return FULGUR_CLIENT_OK;
  } catch (const InvalidHandle& e) {
    return fail(FULGUR_CLIENT_INVALID_HANDLE, std::string(function) + ": " + e.what());
  } catch (const Closed& e) {
    return fail(FULGUR_CLIENT_CLOSED, std::string(function) + ": " + e.what());
  } catch (const ConnectFailed& e) {
    return fail(FULGUR_CLIENT_CONNECT_ERROR, std::string(function) + ": " + e.what());
  } catch (const Unacknowledged& e) {
    return fail(FULGUR_CLIENT_UNACKNOWLEDGED, std::string(function) + ": " + e.what());
  } catch (const fulgur::EnsembleVersionError& e) {
    return fail(FULGUR_CLIENT_VERSION_ERROR, std::string(function) + ": " + e.what());
  } catch (const fulgur::EnsembleRefusedError& e) {
    return fail(FULGUR_CLIENT_CONNECT_ERROR, std::string(function) + ": " + e.what());
  } catch (const std::invalid_argument& e) {
    return fail(FULGUR_CLIENT_INVALID_ARGUMENT, std::string(function) + ": " + e.what());
  } catch (const std::logic_error& e) {
    return fail(FULGUR_CLIENT_CLOSED, std::string(function) + ": " + e.what());
  } catch (const std::exception& e) {
    return fail(FULGUR_CLIENT_INTERNAL_ERROR, std::string(function) + ": " + e.what());
  } catch (...) {
    return fail(FULGUR_CLIENT_INTERNAL_ERROR, std::string(function) + ": an unknown error");
  }
}

/// Runs `call` on a live handle, holding a reference to it (a concurrent
/// destroy frees it only after), and keeps a failure's message on the handle.
template <class Call>
fulgur_client_status guarded(const char* function, fulgur_client* client, Call&& call) {
  std::shared_ptr<fulgur_client> live;
  const fulgur_client_status status = run_mapped(function, [&] {
    if (client == nullptr) throw std::invalid_argument("client must not be null");
    live = handles.find(client);
    if (live == nullptr) throw InvalidHandle(kNotLive);
    call(*live);
  });
  if (status != FULGUR_CLIENT_OK && live != nullptr) {
    try {
      live->error.set(last_error);
    } catch (...) {  // no memory for the copy: the thread's message stays
    }
  }
  return status;
}

/// The open client of `handle`, or Closed.
std::shared_ptr<fulgur::EnsembleClient> open_client(fulgur_client& handle, const char* closed_message) {
  const std::lock_guard lock(handle.mutex);
  if (handle.client == nullptr) throw Closed(closed_message);
  return handle.client;
}

std::vector<int64_t> shape_of(const int64_t* shape, int ndim, const char* what) {
  if (shape == nullptr || ndim < 1) {
    throw std::invalid_argument(std::string(what) + ": a shape of at least one dimension (the sample count)");
  }
  return {shape, shape + ndim};
}

template <class T>
fulgur_client_status send(const char* function, fulgur_client* c, const T* x, const int64_t* x_shape, int x_ndim,
                          const T* y, const int64_t* y_shape, int y_ndim) {
  return guarded(function, c, [&](fulgur_client& handle) {
    if (x == nullptr || y == nullptr) throw std::invalid_argument("x and y must not be null");
    open_client(handle, "the client is closed")
        ->send(x, shape_of(x_shape, x_ndim, "x_shape"), y, shape_of(y_shape, y_ndim, "y_shape"));
  });
}

/// The caller's options, read up to its struct_size (an older header's
/// shorter struct keeps the defaults for what it lacks); fields past this
/// library's struct must be zero (a newer header's options it cannot honour).
fulgur_client_options read_options(const fulgur_client_options* given) {
  fulgur_client_options o = fulgur_client_default_options();
  if (given == nullptr) return o;
  const size_t size = given->struct_size;  // every version's first field
  constexpr size_t kLargest = 4096;        // past this, a struct_size never set, not a newer header
  if (size < sizeof(size_t) || size > kLargest) {
    throw std::invalid_argument("options->struct_size must be sizeof(fulgur_client_options) (" +
                                std::to_string(sizeof(fulgur_client_options)) + " here), got " +
                                std::to_string(size) + ": start from fulgur_client_default_options()");
  }
  if (size > sizeof o) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(given);
    if (std::any_of(bytes + sizeof o, bytes + size, [](unsigned char b) { return b != 0; })) {
      throw std::invalid_argument("options->struct_size is " + std::to_string(size) + " but this library (fulgur " +
                                  FULGUR_VERSION + ") knows " + std::to_string(sizeof o) +
                                  " bytes of fulgur_client_options, and the fields past them are set");
    }
  }
  std::memcpy(&o, given, std::min(size, sizeof o));
  o.struct_size = sizeof o;
  return o;
}

void check_options(const fulgur_client_options& o) {
  if (o.queue_capacity < 1 || !(o.connect_timeout_s >= 0) || !(o.close_timeout_s >= 0) || o.ranks < 0) {
    throw std::invalid_argument("queue_capacity must be >= 1, the timeouts and ranks >= 0, got " +
                                std::to_string(o.queue_capacity) + ", " + std::to_string(o.connect_timeout_s) +
                                ", " + std::to_string(o.close_timeout_s) + " and " + std::to_string(o.ranks));
  }
  if (o.when_full != FULGUR_CLIENT_BLOCK && o.when_full != FULGUR_CLIENT_DROP_OLDEST) {
    throw std::invalid_argument("when_full must be FULGUR_CLIENT_BLOCK (0) or FULGUR_CLIENT_DROP_OLDEST (1), got " +
                                std::to_string(o.when_full));
  }
}

}  // namespace

extern "C" {

fulgur_client_options fulgur_client_default_options(void) {
  // Plain values, nothing that can throw: the defaults of EnsembleClientOptions.
  const fulgur::EnsembleClientOptions d;
  return {sizeof(fulgur_client_options), d.queue_capacity, static_cast<int32_t>(d.when_full), d.connect_timeout_s,
          d.close_timeout_s, d.ranks};
}

const char* fulgur_client_version(void) { return FULGUR_VERSION; }

int fulgur_client_version_number(void) { return FULGUR_VERSION_NUMBER; }

const char* fulgur_client_strerror(fulgur_client_status status) {
  switch (status) {
    case FULGUR_CLIENT_OK: return "no error";
    case FULGUR_CLIENT_INVALID_ARGUMENT: return "invalid argument";
    case FULGUR_CLIENT_CONNECT_ERROR: return "connect error";
    case FULGUR_CLIENT_CLOSED: return "closed";
    case FULGUR_CLIENT_INTERNAL_ERROR: return "internal error";
    case FULGUR_CLIENT_UNACKNOWLEDGED: return "not acknowledged";
    case FULGUR_CLIENT_INVALID_HANDLE: return "invalid handle";
    case FULGUR_CLIENT_VERSION_ERROR: return "protocol version mismatch";
  }
  return "unknown status";
}

fulgur_client_status fulgur_client_connect(const char* rendezvous, int64_t client_id,
                                           const fulgur_client_options* options, fulgur_client** out) {
  return run_mapped("fulgur_client_connect", [&] {
    if (out != nullptr) *out = nullptr;
    if (rendezvous == nullptr || out == nullptr || client_id < 0) {
      throw std::invalid_argument("rendezvous and out must not be null, client_id must be >= 0");
    }
    const fulgur_client_options o = read_options(options);
    check_options(o);
    auto handle = std::make_shared<fulgur_client>();
    try {
      handle->client = std::make_shared<fulgur::EnsembleClient>(
          rendezvous, static_cast<uint64_t>(client_id),
          fulgur::EnsembleClientOptions{o.queue_capacity,
                                        o.when_full == FULGUR_CLIENT_DROP_OLDEST ? fulgur::WhenQueueFull::DropOldest
                                                                                 : fulgur::WhenQueueFull::Block,
                                        o.connect_timeout_s, o.close_timeout_s, o.ranks});
    } catch (const std::exception& e) {  // the file (missing, unreadable) or an endpoint: the options were checked
      throw ConnectFailed(e.what());
    }
    *out = handles.add(std::move(handle));
  });
}

fulgur_client_status fulgur_client_send(fulgur_client* client, const float* x, const int64_t* x_shape, int x_ndim,
                                        const float* y, const int64_t* y_shape, int y_ndim) {
  return send("fulgur_client_send", client, x, x_shape, x_ndim, y, y_shape, y_ndim);
}

fulgur_client_status fulgur_client_send_f64(fulgur_client* client, const double* x, const int64_t* x_shape,
                                            int x_ndim, const double* y, const int64_t* y_shape, int y_ndim) {
  return send("fulgur_client_send_f64", client, x, x_shape, x_ndim, y, y_shape, y_ndim);
}

fulgur_client_status fulgur_client_close(fulgur_client* client, int64_t* sent, int64_t* dropped, int64_t* queued) {
  return guarded("fulgur_client_close", client, [&](fulgur_client& handle) {
    std::shared_ptr<fulgur::EnsembleClient> open;
    {
      const std::lock_guard lock(handle.mutex);
      if (handle.client == nullptr) throw Closed("the client is closed already");
      open = std::move(handle.client);  // closed from here on: later calls answer CLOSED
    }
    std::exception_ptr failure;
    try {
      open->close();
    } catch (...) {
      failure = std::current_exception();
    }
    const fulgur::EnsembleClientCounts counts = open->counts();
    if (sent != nullptr) *sent = counts.sent;
    if (dropped != nullptr) *dropped = counts.dropped;
    if (queued != nullptr) *queued = counts.queued;
    const uint64_t id = open->client_id();
    const int64_t ranks = open->ranks();
    open.reset();  // the thread and the sockets go (unless a racing send still holds them)
    if (failure) std::rethrow_exception(failure);
    if (!counts.acknowledged()) {
      throw Unacknowledged("client " + std::to_string(id) + ": close_timeout_s passed with " +
                           std::to_string(counts.queued) + " sample(s) never sent and " +
                           std::to_string(counts.unacknowledged_ranks) + " of " + std::to_string(ranks) +
                           " server rank(s) not acknowledging all they were sent and the goodbye (is the server "
                           "running?)");
    }
  });
}

void fulgur_client_destroy(fulgur_client* client) {
  try {
    // Destroyed already, or not ours: nothing to free (never a double free).
    // An open client closes in its destructor, here or at the end of the
    // last call on another thread that still holds it.
    handles.remove(client);
  } catch (...) {  // never across the C boundary
  }
}

const char* fulgur_client_last_error(void) { return last_error.c_str(); }

const char* fulgur_client_errmsg(const fulgur_client* client) {
  try {
    return handles.message_of(client, kNotLive);
  } catch (...) {  // never across the C boundary
    return "fulgur_client_errmsg: no memory for the message";
  }
}

}  // extern "C"
