#include <fulgur/strategies/environments/hostlist.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <stdexcept>

namespace fulgur {

namespace {

constexpr std::size_t kMaxHosts = std::size_t{1} << 20;

[[noreturn]] void fail(const std::string& what, const std::string& text) {
  throw std::invalid_argument(fmt::format("[expand_hostlist] {} in hostlist '{}'", what, text));
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

uint64_t to_number(const std::string& digits, const std::string& item, const std::string& text) {
  uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) fail(fmt::format("range '{}' is too large", item), text);
  return value;
}

/// The names one bracket group stands for, e.g. "0001-0003,0007" ->
/// 0001 0002 0003 0007. `budget` is how many names may still be produced.
std::vector<std::string> expand_group(const std::string& group, const std::string& text, std::size_t budget) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = group.find(',', start);
    const std::string item = group.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) fail(fmt::format("empty range in '[{}]'", group), text);
    const std::size_t dash = item.find('-');
    if (dash == std::string::npos) {
      if (!all_digits(item)) fail(fmt::format("range '{}' is not numeric", item), text);
      names.push_back(item);  // as written: "[007]" stays 007
    } else {
      const std::string low_text = item.substr(0, dash);
      const std::string high_text = item.substr(dash + 1);
      if (!all_digits(low_text) || !all_digits(high_text)) fail(fmt::format("range '{}' is not numeric", item), text);
      const uint64_t low = to_number(low_text, item, text);
      const uint64_t high = to_number(high_text, item, text);
      if (low > high) fail(fmt::format("reversed range '{}'", item), text);
      if (high - low >= budget || names.size() + (high - low + 1) > budget) {
        fail(fmt::format("range '{}' expands to more than {} names", item, kMaxHosts), text);
      }
      // SLURM pads every number of a range to the width of its low bound.
      const std::size_t width = low_text.size();
      for (uint64_t n = low; n <= high; ++n) names.push_back(fmt::format("{:0{}}", n, width));
    }
    if (names.size() > budget) fail(fmt::format("the list expands to more than {} names", kMaxHosts), text);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

/// Expands one top-level entry such as "rack[1-2]-node[01-02]" and appends
/// the names to `out`.
void expand_entry(const std::string& entry, const std::string& text, std::vector<std::string>& out) {
  if (entry.empty()) fail("empty host name", text);
  std::vector<std::string> partial{""};
  std::size_t pos = 0;
  while (pos < entry.size()) {
    const std::size_t open = entry.find('[', pos);
    const std::string literal = entry.substr(pos, open == std::string::npos ? std::string::npos : open - pos);
    for (auto& name : partial) name += literal;
    if (open == std::string::npos) break;
    const std::size_t close = entry.find(']', open);  // balance was checked by the caller
    const std::size_t budget = kMaxHosts - out.size();
    const auto group = expand_group(entry.substr(open + 1, close - open - 1), text, budget);
    if (partial.size() * group.size() > budget) {
      fail(fmt::format("the list expands to more than {} names", kMaxHosts), text);
    }
    std::vector<std::string> next;
    next.reserve(partial.size() * group.size());
    for (const auto& prefix : partial) {
      for (const auto& suffix : group) next.push_back(prefix + suffix);
    }
    partial = std::move(next);
    pos = close + 1;
  }
  if (out.size() + partial.size() > kMaxHosts) {
    fail(fmt::format("the list expands to more than {} names", kMaxHosts), text);
  }
  out.insert(out.end(), partial.begin(), partial.end());
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("[expand_hostlist] hostlist '' is empty");
  // One pass checks the brackets and splits at the commas that are outside
  // them; commas inside a group separate ranges, not hosts.
  std::vector<std::string> entries;
  std::string current;
  bool in_group = false;
  for (char c : text) {
    if (c == '[') {
      if (in_group) fail("nested '['", text);
      in_group = true;
    } else if (c == ']') {
      if (!in_group) fail("unbalanced ']'", text);
      in_group = false;
    } else if (c == ',' && !in_group) {
      entries.push_back(std::move(current));
      current.clear();
      continue;
    }
    current += c;
  }
  if (in_group) fail("unbalanced '['", text);
  entries.push_back(std::move(current));

  std::vector<std::string> hosts;
  for (const auto& entry : entries) expand_entry(entry, text, hosts);
  return hosts;
}

}  // namespace fulgur
