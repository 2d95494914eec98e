#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

namespace fulgur {

/// Appends serialized records to one TFRecord file (the container of
/// TensorBoard event files) from a background thread, so the caller never
/// waits on the disk. The queue is bounded: when it holds `max_queue`
/// records the caller waits for the writer to catch up. The writer flushes
/// the file every `flush_secs` seconds, on flush() and on close().
///
/// A write error is remembered and thrown, naming the file, from the next
/// write(), flush() or close().
class EventFileWriter {
 public:
  /// Creates (truncates) `path`; throws std::runtime_error naming it if it
  /// cannot be opened.
  EventFileWriter(std::filesystem::path path, size_t max_queue, double flush_secs);
  /// Closes; an error at this point is printed, not thrown.
  ~EventFileWriter();

  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  /// Queues one record (a serialized Event).
  void write(std::string record);
  /// Returns once every record queued so far is in the file and the file
  /// is flushed to the operating system.
  void flush();
  /// Flushes, stops the thread and closes the file. Idempotent.
  void close();

  const std::filesystem::path& path() const { return path_; }

 private:
  void run();
  void throw_if_failed();  // with mutex_ held

  std::filesystem::path path_;
  size_t max_queue_;
  std::chrono::duration<double> flush_interval_;
  std::FILE* file_ = nullptr;

  std::mutex mutex_;
  std::condition_variable wake_writer_;
  std::condition_variable progress_;
  std::deque<std::string> queue_;
  uint64_t queued_ = 0;   // records ever queued
  uint64_t written_ = 0;  // records handed to the file
  uint64_t flushed_ = 0;  // records known to be flushed
  bool flush_requested_ = false;
  bool stopping_ = false;
  std::string error_;
  std::thread thread_;
};

}  // namespace fulgur
