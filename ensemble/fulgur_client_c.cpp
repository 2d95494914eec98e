// The C API over EnsembleClient: every exception becomes a status and one line in last_error.
#include <fulgur/ensemble/fulgur_client.h>

#include <fulgur/ensemble/ensemble_client.hpp>
#include <fulgur/ensemble/ensemble_refused_error.hpp>

#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

struct fulgur_client {
  std::unique_ptr<fulgur::EnsembleClient> client;
};

namespace {

thread_local std::string last_error;

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
  fulgur::EnsembleClientCounts counts;
  const fulgur_client_status status = guarded("fulgur_client_close", [&] { client->client->close(); });
  counts = client->client->counts();
  delete client;
  if (sent != nullptr) *sent = counts.sent;
  if (dropped != nullptr) *dropped = counts.dropped;
  if (queued != nullptr) *queued = counts.queued;
  return status;
}

const char* fulgur_client_last_error(void) { return last_error.c_str(); }

}  // extern "C"
