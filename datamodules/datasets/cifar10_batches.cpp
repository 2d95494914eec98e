#include <fulgur/datamodules/datasets/cifar10_batches.hpp>

#include <fulgur/datamodules/data_error.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace fulgur {

const std::vector<std::string>& CIFAR10Batches::classes() const {
  static const std::vector<std::string> names = {"airplane", "automobile", "bird",  "cat",  "deer",
                                                 "dog",      "frog",       "horse", "ship", "truck"};
  return names;
}

std::vector<std::string> CIFAR10Batches::files(bool train) {
  if (!train) return {"test_batch.bin"};
  return {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"};
}

CIFAR10Batches::CIFAR10Batches(std::filesystem::path root, bool train) {
  std::vector<std::string> records;  // each file's bytes
  int64_t total = 0;
  for (const auto& name : files(train)) {
    const auto path = root / name;
    const std::string at = "[CIFAR10Batches] '" + path.string() + "' ";
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DataError(at + "cannot be opened: " + std::strerror(errno));
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw DataError(at + "read error");
    if (bytes.empty() || bytes.size() % kRecordBytes != 0) {
      throw DataError(at + "has " + std::to_string(bytes.size()) + " bytes, not a whole number of " +
                      std::to_string(kRecordBytes) + "-byte records");
    }
    const auto count = static_cast<int64_t>(bytes.size()) / kRecordBytes;
    for (int64_t r = 0; r < count; ++r) {
      const auto label = static_cast<unsigned char>(bytes[static_cast<size_t>(r * kRecordBytes)]);
      if (label > 9) {
        throw DataError(at + "record " + std::to_string(r) + " has label " + std::to_string(label) +
                        "; CIFAR-10 labels are 0-9");
      }
    }
    files_.emplace_back(path, total);
    total += count;
    records.push_back(std::move(bytes));
  }
  // [n, 3073] -> labels [n] and planes [n, 3, 32, 32] -> HWC [n, 32, 32, 3].
  auto all = torch::empty({total, kRecordBytes}, torch::kUInt8);
  int64_t row = 0;
  for (const auto& bytes : records) {
    std::memcpy(all[row].data_ptr<uint8_t>(), bytes.data(), bytes.size());
    row += static_cast<int64_t>(bytes.size()) / kRecordBytes;
  }
  labels_ = all.select(1, 0).to(torch::kLong).contiguous();
  images_ = all.slice(1, 1).reshape({total, 3, kSide, kSide}).permute({0, 2, 3, 1}).contiguous();
}

void CIFAR10Batches::check_index(int64_t index, const char* where) const {
  if (index < 0 || index >= size()) {
    throw std::out_of_range(std::string(where) + " index " + std::to_string(index) + " is outside [0, " +
                            std::to_string(size()) + ")");
  }
}

std::string CIFAR10Batches::read(int64_t index) const {
  check_index(index, "[CIFAR10Batches::read]");
  throw std::logic_error("[CIFAR10Batches::read] CIFAR-10 records are raw pixels, not encoded images; use pixels()");
}

std::optional<Image> CIFAR10Batches::pixels(int64_t index) const {
  check_index(index, "[CIFAR10Batches::pixels]");
  Image image(kSide, kSide);
  std::memcpy(image.pixels.get(), images_[index].data_ptr<uint8_t>(), image.bytes());
  return image;
}

int64_t CIFAR10Batches::label(int64_t index) const {
  check_index(index, "[CIFAR10Batches::label]");
  return labels_.data_ptr<int64_t>()[index];
}

std::string CIFAR10Batches::name(int64_t index) const {
  check_index(index, "[CIFAR10Batches::name]");
  auto file = files_.begin();
  while (std::next(file) != files_.end() && std::next(file)->second <= index) ++file;
  return file->first.string() + "[" + std::to_string(index - file->second) + "]";
}

}  // namespace fulgur
