// The C API over EnsembleClient: every exception becomes a status and one line in last_error.
#include <fulgur/ensemble/fulgur_client.h>

#include <fulgur/ensemble/ensemble_client.hpp>
#include <fulgur/ensemble/ensemble_refused_error.hpp>
#include <fulgur/ensemble/ensemble_version_error.hpp>

#include <exception>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

struct fulgur_client {
  /// Null once closed: the handle then only answers FULGUR_CLIENT_CLOSED.
  std::unique_ptr<fulgur::EnsembleClient> client;
};

namespace {

thread_local std::string last_error;

// The live handles: a destroyed or foreign pointer is refused, not followed.
std::mutex handles_mutex;
std::set<const fulgur_client*> live_handles;

bool live(const fulgur_client* handle) {
  const std::lock_guard lock(handles_mutex);
  return live_handles.count(handle) != 0;
}

fulgur_client_status fail(fulgur_client_status status, const std::string& message) {
  last_error = message;
  return status;
}

template <class Call>
fulgur_client_status guarded(const char* function, Call call) {
  try {
    call();
    last_error.clear();
    return FULGUR_CLIENT_OK;
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
  }
}

fulgur_client_status invalid_handle(const char* function) {
  return fail(FULGUR_CLIENT_INVALID_HANDLE, std::string(function) + ": the handle is not a live fulgur_client "
                                            "(destroyed already, or not made by fulgur_client_connect)");
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
  if (c == nullptr || x == nullptr || y == nullptr) {
    return fail(FULGUR_CLIENT_INVALID_ARGUMENT, std::string(function) + ": client, x and y must not be null");
  }
  if (!live(c)) return invalid_handle(function);
  if (!c->client) return fail(FULGUR_CLIENT_CLOSED, std::string(function) + ": the client is closed");
  return guarded(function, [&] {
    c->client->send(x, shape_of(x_shape, x_ndim, "x_shape"), y, shape_of(y_shape, y_ndim, "y_shape"));
  });
}

}  // namespace

extern "C" {

fulgur_client_options fulgur_client_default_options(void) {
  const fulgur::EnsembleClientOptions d;
  return {d.queue_capacity, static_cast<int32_t>(d.when_full), d.connect_timeout_s, d.close_timeout_s, d.ranks};
}

fulgur_client_status fulgur_client_connect(const char* rendezvous, int64_t client_id,
                                           const fulgur_client_options* options, fulgur_client** out) {
  if (out != nullptr) *out = nullptr;
  if (rendezvous == nullptr || out == nullptr || client_id < 0) {
    return fail(FULGUR_CLIENT_INVALID_ARGUMENT,
                "fulgur_client_connect: rendezvous and out must not be null, client_id must be >= 0");
  }
  const fulgur_client_options o = options != nullptr ? *options : fulgur_client_default_options();
  if (o.queue_capacity < 1 || !(o.connect_timeout_s >= 0) || !(o.close_timeout_s >= 0) || o.ranks < 0) {
    return fail(FULGUR_CLIENT_INVALID_ARGUMENT,
                "fulgur_client_connect: queue_capacity must be >= 1, the timeouts and ranks >= 0, got " +
                    std::to_string(o.queue_capacity) + ", " + std::to_string(o.connect_timeout_s) + ", " +
                    std::to_string(o.close_timeout_s) + " and " + std::to_string(o.ranks));
  }
  if (o.when_full != FULGUR_CLIENT_BLOCK && o.when_full != FULGUR_CLIENT_DROP_OLDEST) {
    return fail(FULGUR_CLIENT_INVALID_ARGUMENT, "fulgur_client_connect: when_full must be FULGUR_CLIENT_BLOCK (0) or "
                                                "FULGUR_CLIENT_DROP_OLDEST (1), got " + std::to_string(o.when_full));
  }
  try {
    auto handle = std::make_unique<fulgur_client>();
    handle->client = std::make_unique<fulgur::EnsembleClient>(
        rendezvous, static_cast<uint64_t>(client_id),
        fulgur::EnsembleClientOptions{o.queue_capacity,
                                      o.when_full == FULGUR_CLIENT_DROP_OLDEST ? fulgur::WhenQueueFull::DropOldest
                                                                               : fulgur::WhenQueueFull::Block,
                                      o.connect_timeout_s, o.close_timeout_s, o.ranks});
    {
      const std::lock_guard lock(handles_mutex);
      live_handles.insert(handle.get());
    }
    *out = handle.release();
    last_error.clear();
    return FULGUR_CLIENT_OK;
  } catch (const std::exception& e) {  // the file (missing, unreadable) or an endpoint: the options were checked
    return fail(FULGUR_CLIENT_CONNECT_ERROR, std::string("fulgur_client_connect: ") + e.what());
  }
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
  if (client == nullptr) return fail(FULGUR_CLIENT_INVALID_ARGUMENT, "fulgur_client_close: client must not be null");
  if (!live(client)) return invalid_handle("fulgur_client_close");
  if (!client->client) return fail(FULGUR_CLIENT_CLOSED, "fulgur_client_close: the client is closed already");
  fulgur_client_status status = guarded("fulgur_client_close", [&] { client->client->close(); });
  const fulgur::EnsembleClientCounts counts = client->client->counts();
  const uint64_t id = client->client->client_id();
  const int64_t ranks = client->client->ranks();
  client->client.reset();  // closed: the thread and the sockets are gone, the handle stays
  if (status == FULGUR_CLIENT_OK && !counts.acknowledged()) {
    status = fail(FULGUR_CLIENT_UNACKNOWLEDGED,
                  "fulgur_client_close: client " + std::to_string(id) + ": close_timeout_s passed with " +
                      std::to_string(counts.queued) + " sample(s) never sent and " +
                      std::to_string(counts.unacknowledged_ranks) + " of " + std::to_string(ranks) +
                      " server rank(s) not acknowledging all they were sent and the goodbye (is the server running?)");
  }
  if (sent != nullptr) *sent = counts.sent;
  if (dropped != nullptr) *dropped = counts.dropped;
  if (queued != nullptr) *queued = counts.queued;
  return status;
}

void fulgur_client_destroy(fulgur_client* client) {
  try {
    {
      const std::lock_guard lock(handles_mutex);
      // Destroyed already, or not ours: nothing to free (never a double free).
      if (client == nullptr || live_handles.erase(client) == 0) return;
    }
    delete client;  // an open client closes in its destructor
  } catch (...) {  // never across the C boundary
  }
}

const char* fulgur_client_last_error(void) { return last_error.c_str(); }

}  // extern "C"
