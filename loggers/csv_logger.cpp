#include <fulgur/loggers/csv_logger.hpp>

#include <fulgur/loggers/run_folder.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace fulgur {
namespace {

std::string format_row(const std::vector<std::string>& columns, const std::map<std::string, double>& row) {
  std::string line;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i) line += ',';
    auto it = row.find(columns[i]);
    if (it != row.end()) line += fmt::format("{}", it->second);
  }
  return line + '\n';
}

void check_stream(const std::ios& stream, const std::filesystem::path& path) {
  if (!stream) throw std::runtime_error(fmt::format("[CSVLogger::save] cannot write {}", path.string()));
}

}  // namespace

CSVLogger::CSVLogger(std::filesystem::path root_dir, std::string name, std::optional<int64_t> version)
    : root_dir_(std::move(root_dir)), name_(std::move(name)), version_(version) {
  if (version_ && *version_ < 0) {
    throw std::invalid_argument(fmt::format("[CSVLogger::CSVLogger] version must be >= 0, got {}", *version_));
  }
}

int64_t CSVLogger::version() {
  if (!version_) version_ = claim_version(root_dir_ / name_);
  return *version_;
}

std::filesystem::path CSVLogger::log_dir() { return root_dir_ / name_ / fmt::format("version_{}", version()); }

void CSVLogger::log_hyperparams(const YAML::Node& hparams) { write_hparams_yaml(log_dir(), hparams, "CSVLogger"); }

void CSVLogger::log_metrics(const std::map<std::string, double>& metrics, int64_t step) {
  auto row = metrics;
  row["step"] = static_cast<double>(step);
  for (const auto& [key, value] : row) {
    if (key != "epoch" && key != "step") metric_names_.insert(key);
  }
  rows_.push_back(std::move(row));
}

std::vector<std::string> CSVLogger::columns() const {
  std::vector<std::string> cols{"epoch", "step"};
  cols.insert(cols.end(), metric_names_.begin(), metric_names_.end());
  return cols;
}

void CSVLogger::save() {
  if (rows_written_ == rows_.size()) return;
  if (columns() == written_columns_) {
    append_pending();
  } else {
    write_all();  // a new metric appeared: the header changes
  }
}

void CSVLogger::append_pending() {
  const auto path = metrics_file();
  std::ofstream out(path, std::ios::app);
  for (; rows_written_ < rows_.size(); ++rows_written_) out << format_row(written_columns_, rows_[rows_written_]);
  out.flush();
  check_stream(out, path);
}

void CSVLogger::write_all() {
  const auto dir = log_dir();
  std::filesystem::create_directories(dir);
  const auto path = metrics_file();
  const auto temp = dir / "metrics.csv.tmp";
  const auto cols = columns();
  {
    std::ofstream out(temp, std::ios::trunc);
    out << fmt::format("{}\n", fmt::join(cols, ","));
    for (const auto& row : rows_) out << format_row(cols, row);
    out.flush();
    check_stream(out, temp);
  }
  // Replace in one step, so a reader never sees a half-written header.
  std::filesystem::rename(temp, path);
  written_columns_ = cols;
  rows_written_ = rows_.size();
}

}  // namespace fulgur

namespace fulgur {

std::map<std::string, int64_t> CSVLogger::state_dict() {
  save();
  return {{"version", version()}, {"rows", static_cast<int64_t>(rows_written_)}};
}

void CSVLogger::load_state_dict(const std::map<std::string, int64_t>& state) {
  const auto version = state.find("version");
  const auto rows = state.find("rows");
  if (version == state.end() || rows == state.end()) return;
  version_ = version->second;
  rows_.clear();
  metric_names_.clear();
  rows_written_ = 0;
  written_columns_.clear();
  const auto path = metrics_file();
  std::ifstream in(path);
  std::string header;
  if (in && std::getline(in, header)) {
    std::vector<std::string> columns;
    std::stringstream split(header);
    for (std::string name; std::getline(split, name, ',');) columns.push_back(name);
    std::string line;
    while (static_cast<int64_t>(rows_.size()) < rows->second && std::getline(in, line)) {
      std::map<std::string, double> row;
      std::stringstream cells(line);
      std::string cell;
      for (size_t i = 0; i < columns.size() && std::getline(cells, cell, ','); ++i) {
        if (!cell.empty()) row[columns[i]] = std::stod(cell);
      }
      for (const auto& [key, value] : row) {
        if (key != "epoch" && key != "step") metric_names_.insert(key);
      }
      rows_.push_back(std::move(row));
    }
  }
  in.close();
  // The kept rows replace the file (dropping whatever was logged after the
  // checkpoint) at the next save(): written_columns_ is empty, so it rewrites
  // everything. Not here: every rank restores the logger (they must agree on
  // the run folder), but only rank 0 saves; two ranks rewriting metrics.csv
  // through the same temp file made one of them fail on the rename.
}

}  // namespace fulgur
