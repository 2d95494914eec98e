#include <fulgur/loggers/tensor_board_logger.hpp>

#include <fulgur/loggers/proto_encoder.hpp>
#include <fulgur/loggers/run_folder.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>

namespace fulgur {
namespace {

// Field numbers below are those of tensorboard/compat/proto/{event,summary}.proto
// and tensorboard/plugins/hparams/{plugin_data,api}.proto.
constexpr int kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5;
constexpr int kSummaryValue = 1;
constexpr int kValueTag = 1, kValueSimpleValue = 2, kValueHisto = 5, kValueMetadata = 9;
constexpr int kMetadataPluginData = 1, kPluginName = 1, kPluginContent = 2;
constexpr int kHistoMin = 1, kHistoMax = 2, kHistoNum = 3, kHistoSum = 4, kHistoSumSquares = 5,
              kHistoBucketLimit = 6, kHistoBucket = 7;
constexpr int kHParamsVersion = 1, kHParamsExperiment = 2, kHParamsSessionStart = 3, kHParamsSessionEnd = 4;
constexpr int kSessionStartHParams = 1, kSessionStartTime = 5;
constexpr int kSessionEndStatus = 1, kSessionEndTime = 2;
constexpr int kExperimentTimeCreated = 3, kExperimentHParamInfos = 4, kExperimentMetricInfos = 5;
constexpr int kHParamInfoName = 1, kHParamInfoType = 4;
constexpr int kMetricInfoName = 1, kMetricNameTag = 2;
constexpr int kMapKey = 1, kMapValue = 2;
constexpr int kProtoValueNumber = 2, kProtoValueString = 3, kProtoValueBool = 4;
enum DataType : uint64_t { kDataTypeString = 1, kDataTypeBool = 2, kDataTypeFloat64 = 3 };
enum Status : uint64_t { kStatusUnknown = 0, kStatusSuccess = 1, kStatusFailure = 2 };

double now_secs() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A typed hyper-parameter value, as the hparams plugin wants it.
struct TypedValue {
  DataType type = kDataTypeString;
  ProtoEncoder encoded;  // a google.protobuf.Value
};

TypedValue typed_value(const std::string& text) {
  TypedValue v;
  if (text == "true" || text == "false") {
    v.type = kDataTypeBool;
    v.encoded.varint(kProtoValueBool, text == "true" ? 1 : 0);
    return v;
  }
  try {
    size_t used = 0;
    const double number = std::stod(text, &used);
    if (used == text.size() && !text.empty()) {
      v.type = kDataTypeFloat64;
      v.encoded.float64(kProtoValueNumber, number);
      return v;
    }
  } catch (const std::exception&) {
  }
  v.encoded.bytes(kProtoValueString, text);
  return v;
}

// Nested mappings become dotted names; lists their flow-YAML text; null the string "null".
void flatten(const YAML::Node& node, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  if (node.IsMap()) {
    for (const auto& item : node) {
      const std::string key = item.first.as<std::string>();
      flatten(item.second, prefix.empty() ? key : prefix + "." + key, out);
    }
    return;
  }
  if (prefix.empty()) return;
  if (node.IsNull()) {
    out.emplace_back(prefix, "null");
  } else if (node.IsScalar()) {
    out.emplace_back(prefix, node.Scalar());
  } else {
    YAML::Emitter text;
    text << YAML::Flow << node;
    out.emplace_back(prefix, text.c_str());
  }
}

// A Summary.Value carrying plugin data only (how the hparams plugin stores its records).
ProtoEncoder plugin_summary(const std::string& tag, const ProtoEncoder& content) {
  ProtoEncoder plugin_data;
  plugin_data.bytes(kPluginName, "hparams").message(kPluginContent, content);
  ProtoEncoder metadata;
  metadata.message(kMetadataPluginData, plugin_data);
  ProtoEncoder value;
  value.bytes(kValueTag, tag).message(kValueMetadata, metadata);
  ProtoEncoder summary;
  summary.message(kSummaryValue, value);
  return summary;
}

ProtoEncoder hparams_plugin_data(int which, const ProtoEncoder& body) {
  ProtoEncoder data;
  data.varint(kHParamsVersion, 0).message(which, body);
  return data;
}

std::string event_file_name() {
  static std::atomic<int64_t> counter{0};  // distinct names for files opened in the same second
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  return fmt::format("events.out.tfevents.{}.{}.{}.{}", static_cast<int64_t>(now_secs()), host,
                     static_cast<int64_t>(getpid()), counter++);
}

}  // namespace

TensorBoardLogger::TensorBoardLogger(std::filesystem::path root_dir, std::string name, std::optional<int64_t> version)
    : root_dir_(std::move(root_dir)), name_(std::move(name)), version_(version) {
  if (version_ && *version_ < 0) {
    throw std::invalid_argument(
        fmt::format("[TensorBoardLogger::TensorBoardLogger] version must be >= 0, got {}", *version_));
  }
}

TensorBoardLogger& TensorBoardLogger::max_queue(size_t records) {
  if (records == 0) throw std::invalid_argument("[TensorBoardLogger::max_queue] must be >= 1, got 0");
  max_queue_ = records;
  return *this;
}

TensorBoardLogger& TensorBoardLogger::flush_secs(double seconds) {
  if (!(seconds > 0)) {
    throw std::invalid_argument(fmt::format("[TensorBoardLogger::flush_secs] must be > 0, got {}", seconds));
  }
  flush_secs_ = seconds;
  return *this;
}

TensorBoardLogger& TensorBoardLogger::hparams_metrics(std::vector<std::string> tags) {
  hparams_metrics_ = std::move(tags);
  return *this;
}

int64_t TensorBoardLogger::version() {
  if (!version_) version_ = claim_version(root_dir_ / name_);
  return *version_;
}

std::filesystem::path TensorBoardLogger::log_dir() {
  return root_dir_ / name_ / fmt::format("version_{}", version());
}

EventFileWriter& TensorBoardLogger::writer() {
  if (!writer_) {
    const auto dir = log_dir();
    std::filesystem::create_directories(dir);
    event_file_ = dir / event_file_name();
    writer_ = std::make_unique<EventFileWriter>(event_file_, max_queue_, flush_secs_);
    ProtoEncoder header;
    header.float64(kEventWallTime, now_secs()).bytes(kEventFileVersion, "brain.Event:2");
    writer_->write(header.data());
  }
  return *writer_;
}

void TensorBoardLogger::write_event(int64_t step, const std::string& summary) {
  ProtoEncoder event;
  event.float64(kEventWallTime, now_secs()).varint(kEventStep, static_cast<uint64_t>(step));
  event.bytes(kEventSummary, summary);
  writer().write(event.data());
}

void TensorBoardLogger::log_hyperparams(const YAML::Node& hparams) {
  write_hparams_yaml(log_dir(), hparams, "TensorBoardLogger");
  hparams_.clear();
  flatten(hparams, "", hparams_);
  ProtoEncoder start;
  for (const auto& [key, text] : hparams_) {
    ProtoEncoder entry;
    entry.bytes(kMapKey, key).message(kMapValue, typed_value(text).encoded);
    start.message(kSessionStartHParams, entry);
  }
  start.float64(kSessionStartTime, now_secs());
  write_event(0, plugin_summary("_hparams_/session_start_info", hparams_plugin_data(kHParamsSessionStart, start))
                     .data());
  // TensorBoard takes the first experiment record it finds in the log
  // folder as the column set of every run there; without one it builds the
  // columns from all runs' hyper-parameters and scalar tags, which suits
  // comparing runs better. So the record is written only to choose metrics.
  if (!hparams_metrics_.empty()) write_experiment();
  hparams_logged_ = true;
}

void TensorBoardLogger::write_experiment() {
  ProtoEncoder experiment;
  experiment.float64(kExperimentTimeCreated, now_secs());
  for (const auto& [key, text] : hparams_) {
    ProtoEncoder info;
    info.bytes(kHParamInfoName, key).varint(kHParamInfoType, typed_value(text).type);
    experiment.message(kExperimentHParamInfos, info);
  }
  for (const auto& tag : hparams_metrics_) {
    ProtoEncoder metric_name;
    metric_name.bytes(kMetricNameTag, tag);
    ProtoEncoder info;
    info.message(kMetricInfoName, metric_name);
    experiment.message(kExperimentMetricInfos, info);
  }
  write_event(0, plugin_summary("_hparams_/experiment", hparams_plugin_data(kHParamsExperiment, experiment)).data());
}

void TensorBoardLogger::log_metrics(const std::map<std::string, double>& metrics, int64_t step) {
  if (metrics.empty()) return;
  ProtoEncoder summary;
  for (const auto& [tag, value] : metrics) {
    ProtoEncoder entry;
    entry.bytes(kValueTag, tag).float32(kValueSimpleValue, static_cast<float>(value));
    summary.message(kSummaryValue, entry);
  }
  write_event(step, summary.data());
}

void TensorBoardLogger::log_histogram(const std::string& tag, const torch::Tensor& values, int64_t step) {
  constexpr int64_t kBuckets = 30;
  torch::NoGradGuard no_grad;
  torch::Tensor x = values.detach().to(torch::kCPU, torch::kDouble).flatten();
  x = x.masked_select(torch::isfinite(x));
  ProtoEncoder histo;
  const int64_t count = x.numel();
  if (count == 0) {
    histo.float64(kHistoMin, 0).float64(kHistoMax, 0).float64(kHistoNum, 0).float64(kHistoSum, 0);
    histo.float64(kHistoSumSquares, 0);
  } else {
    const double lo = x.min().item<double>();
    const double hi = x.max().item<double>();
    histo.float64(kHistoMin, lo).float64(kHistoMax, hi).float64(kHistoNum, static_cast<double>(count));
    histo.float64(kHistoSum, x.sum().item<double>()).float64(kHistoSumSquares, x.square().sum().item<double>());
    // Bucket i counts values in (limit[i-1], limit[i]]; all equal values make one bucket.
    std::vector<double> limits;
    std::vector<double> counts;
    if (hi > lo) {
      const torch::Tensor hist = torch::histc(x, kBuckets, lo, hi);
      for (int64_t i = 0; i < kBuckets; ++i) {
        limits.push_back(lo + (hi - lo) * static_cast<double>(i + 1) / kBuckets);
        counts.push_back(hist[i].item<double>());
      }
    } else {
      limits.push_back(hi);
      counts.push_back(static_cast<double>(count));
    }
    histo.packed_float64(kHistoBucketLimit, limits).packed_float64(kHistoBucket, counts);
  }
  ProtoEncoder entry;
  entry.bytes(kValueTag, tag).message(kValueHisto, histo);
  ProtoEncoder summary;
  summary.message(kSummaryValue, entry);
  write_event(step, summary.data());
}

void TensorBoardLogger::log_histograms(const torch::nn::Module& module, int64_t step) {
  for (const auto& item : module.named_parameters(/*recurse=*/true)) log_histogram(item.key(), item.value(), step);
}

void TensorBoardLogger::save() {
  if (writer_) writer_->flush();
}

void TensorBoardLogger::finalize(const std::string& status) {
  if (!writer_) return;  // nothing was logged in this run
  if (hparams_logged_) {
    const Status code = status == "success" ? kStatusSuccess : status == "failed" ? kStatusFailure : kStatusUnknown;
    ProtoEncoder end;
    end.varint(kSessionEndStatus, code).float64(kSessionEndTime, now_secs());
    write_event(0, plugin_summary("_hparams_/session_end_info", hparams_plugin_data(kHParamsSessionEnd, end)).data());
  }
  hparams_logged_ = false;
  const std::unique_ptr<EventFileWriter> writer = std::move(writer_);
  writer->close();
}

}  // namespace fulgur
