#pragma once

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace fulgur::testing {

/// The non-empty cells of column `name` in a metrics.csv text, in row order,
/// each with the same row's cell of column `key`; empty when there is no
/// column `name`.
inline std::vector<std::pair<std::string, std::string>> csv_column(const std::string& csv, const std::string& name,
                                                                   const std::string& key = "step") {
  std::istringstream in(csv);
  std::string header;
  std::getline(in, header);
  std::vector<std::string> names;
  std::stringstream hs(header);
  for (std::string n; std::getline(hs, n, ',');) names.push_back(n);
  const auto col = static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin());
  const auto key_col = static_cast<size_t>(std::find(names.begin(), names.end(), key) - names.begin());
  std::vector<std::pair<std::string, std::string>> values;
  if (col == names.size()) return values;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream ls(line);
    for (std::string cell; std::getline(ls, cell, ',');) cells.push_back(cell);
    cells.resize(names.size() + 1);  // the last slot stays empty: the key of a missing key column
    if (!cells[col].empty()) values.emplace_back(cells[key_col], cells[col]);
  }
  return values;
}

/// csv_column as numbers: (step, value).
inline std::vector<std::pair<int64_t, double>> csv_series(const std::string& csv, const std::string& name) {
  std::vector<std::pair<int64_t, double>> series;
  for (const auto& [step, value] : csv_column(csv, name)) series.emplace_back(std::stoll(step), std::stod(value));
  return series;
}

}  // namespace fulgur::testing
