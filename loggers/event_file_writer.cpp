#include <fulgur/loggers/event_file_writer.hpp>

#include <fulgur/loggers/crc32c.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <stdexcept>

namespace fulgur {
namespace {

std::string little_endian(uint64_t value, int byte_count) {
  std::string out;
  for (int i = 0; i < byte_count; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  return out;
}

// TFRecord framing: length, masked CRC of the length, data, masked CRC of the data.
std::string frame(const std::string& data) {
  const std::string length = little_endian(data.size(), 8);
  std::string out = length;
  out += little_endian(masked_crc32c(length), 4);
  out += data;
  out += little_endian(masked_crc32c(data), 4);
  return out;
}

}  // namespace

EventFileWriter::EventFileWriter(std::filesystem::path path, size_t max_queue, double flush_secs)
    : path_(std::move(path)),
      max_queue_(std::max<size_t>(max_queue, 1)),
      flush_interval_(flush_secs > 0 ? flush_secs : 1e-3) {
  file_ = std::fopen(path_.c_str(), "wb");
  if (file_ == nullptr) {
    throw std::runtime_error(
        fmt::format("[EventFileWriter] cannot create {}: {}", path_.string(), std::strerror(errno)));
  }
  thread_ = std::thread([this] { run(); });
}

EventFileWriter::~EventFileWriter() {
  try {
    close();
  } catch (const std::exception& e) {
    std::cerr << "fulgur: " << e.what() << std::endl;
  }
}

void EventFileWriter::throw_if_failed() {
  if (!error_.empty()) throw std::runtime_error(error_);
}

void EventFileWriter::write(std::string record) {
  std::unique_lock<std::mutex> lock(mutex_);
  throw_if_failed();
  if (stopping_) throw std::logic_error(fmt::format("[EventFileWriter] {} is closed", path_.string()));
  progress_.wait(lock, [&] { return queue_.size() < max_queue_ || !error_.empty(); });
  throw_if_failed();
  queue_.push_back(std::move(record));
  ++queued_;
  // Wake the writer once the queue is half full, not per record: a
  // thread switch per training step would cost more than the write.
  if (queue_.size() >= (max_queue_ + 1) / 2) wake_writer_.notify_one();
}

void EventFileWriter::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!thread_.joinable()) {
    throw_if_failed();
    return;
  }
  const uint64_t target = queued_;
  flush_requested_ = true;
  wake_writer_.notify_one();
  progress_.wait(lock, [&] { return flushed_ >= target || !error_.empty(); });
  throw_if_failed();
}

void EventFileWriter::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_writer_.notify_one();
  if (thread_.joinable()) thread_.join();
  if (file_ != nullptr) {
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!closed && error_.empty()) {
      error_ = fmt::format("[EventFileWriter] cannot write {}: {}", path_.string(), std::strerror(errno));
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  throw_if_failed();
}

void EventFileWriter::run() {
  using Clock = std::chrono::steady_clock;
  auto next_flush = Clock::now() + std::chrono::duration_cast<Clock::duration>(flush_interval_);
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_writer_.wait_until(lock, next_flush, [&] {
      return queue_.size() >= (max_queue_ + 1) / 2 || flush_requested_ || stopping_;
    });
    std::deque<std::string> batch;
    batch.swap(queue_);
    const bool flush_now = flush_requested_ || stopping_ || Clock::now() >= next_flush;
    if (flush_now) flush_requested_ = false;
    const bool stop = stopping_;
    const uint64_t batch_end = written_ + batch.size();
    lock.unlock();
    progress_.notify_all();  // room in the queue again

    bool ok = true;
    for (const auto& record : batch) {
      const std::string framed = frame(record);
      if (std::fwrite(framed.data(), 1, framed.size(), file_) != framed.size()) {
        ok = false;
        break;
      }
    }
    if (ok && flush_now) ok = std::fflush(file_) == 0;
    const int saved_errno = errno;

    lock.lock();
    written_ = batch_end;
    if (flush_now) {
      flushed_ = batch_end;
      next_flush = Clock::now() + std::chrono::duration_cast<Clock::duration>(flush_interval_);
    }
    if (!ok && error_.empty()) {
      error_ = fmt::format("[EventFileWriter] cannot write {}: {}", path_.string(), std::strerror(saved_errno));
    }
    progress_.notify_all();
    if (!error_.empty() || (stop && queue_.empty())) break;
  }
}

}  // namespace fulgur
