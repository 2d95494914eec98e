#include <fulgur/loggers/run_folder.hpp>

#include <fulgur/version.hpp>

#include <fmt/format.h>

#include <fstream>
#include <regex>
#include <stdexcept>

namespace fulgur {

int64_t next_version(const std::filesystem::path& dir) {
  int64_t next = 0;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return 0;
  static const std::regex pattern("version_([0-9]+)");
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && std::regex_match(name, match, pattern)) {
      next = std::max<int64_t>(next, std::stoll(match[1].str()) + 1);
    }
  }
  return next;
}

std::filesystem::path RunFolder::path() {
  if (!version) version = claim_version(root_dir / name);
  return root_dir / name / fmt::format("version_{}", *version);
}

std::optional<std::filesystem::path> RunFolder::open_versions_dir() const {
  if (version) return std::nullopt;
  return root_dir / name;
}

int64_t claim_version(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("[claim_version] cannot create {}: {}", dir.string(), ec.message()));
  for (int64_t version = next_version(dir);; ++version) {
    const auto candidate = dir / fmt::format("version_{}", version);
    if (std::filesystem::create_directory(candidate, ec)) return version;
    if (ec) throw std::runtime_error(fmt::format("[claim_version] cannot create {}: {}", candidate.string(), ec.message()));
  }
}

void write_hparams_yaml(const std::filesystem::path& dir, const YAML::Node& hparams, const char* who) {
  std::filesystem::create_directories(dir);
  const auto path = dir / "hparams.yaml";
  std::ofstream out(path);
  YAML::Emitter emitter;
  emitter << (hparams.IsNull() ? YAML::Node(YAML::NodeType::Map) : hparams);
  // The version as a comment: the mapping stays exactly the hyper-parameters
  // (the CLI's resolved configuration, which `--config hparams.yaml` reads
  // back and W&B's config equals), and a person or `head -1` still sees which
  // fulgur wrote it.
  out << "# fulgur " << kVersion << '\n' << emitter.c_str() << '\n';
  out.flush();
  if (!out) throw std::runtime_error(fmt::format("[{}::log_hyperparams] cannot write {}", who, path.string()));
}

}  // namespace fulgur
