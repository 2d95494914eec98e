#include <fulgur/strategies/collectives/timeline.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace fulgur {
namespace {

std::string json_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

Timeline::Timeline(const std::string& path, int64_t rank)
    : path_(path),
      rank_(rank),
      out_(path, std::ios::trunc),
      steady_origin_(Clock::now()),
      wall_origin_us_(std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count()) {
  if (!out_) throw std::runtime_error(fmt::format("[Timeline::Timeline] cannot write the timeline file '{}'", path));
  out_ << "[\n";
  out_ << fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {0}, "args": {{"name": "rank {0}"}}}})", rank_);
  first_ = false;
  out_.flush();
}

Timeline::~Timeline() {
  std::lock_guard<std::mutex> lock(mutex_);
  out_ << "\n]\n";
  out_.flush();
}

void Timeline::record(const std::string& phase, int64_t collective, const std::string& tensors, int64_t bytes,
                      Clock::time_point start, Clock::time_point end) {
  auto to_us = [&](Clock::time_point t) {
    return wall_origin_us_ + std::chrono::duration_cast<std::chrono::microseconds>(t - steady_origin_).count();
  };
  const int64_t ts = to_us(start);
  const int64_t dur = std::max<int64_t>(0, to_us(end) - ts);
  const std::string event = fmt::format(
      R"({{"name": "{}", "cat": "collective", "ph": "X", "pid": {}, "tid": 0, "ts": {}, "dur": {}, )"
      R"("args": {{"collective": {}, "tensors": "{}", "bytes": {}}}}})",
      json_escaped(phase), rank_, ts, dur, collective, json_escaped(tensors), bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  out_ << (first_ ? "" : ",\n") << event;
  first_ = false;
}

std::string Timeline::path_for_rank(const std::string& path, int64_t rank) {
  if (rank == 0) return path;
  const std::filesystem::path p(path);
  return (p.parent_path() / fmt::format("{}.rank{}{}", p.stem().string(), rank, p.extension().string())).string();
}

}  // namespace fulgur
