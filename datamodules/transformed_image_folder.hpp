#pragma once

#include <fulgur/datamodules/compose.hpp>
#include <fulgur/datamodules/dataset.hpp>
#include <fulgur/datamodules/image_folder.hpp>

#include <cstdint>
#include <memory>

namespace fulgur {

/// The images of an ImageFolder through a Compose pipeline, for one epoch.
/// Sample i is decoded with the pipeline's decode hints (crop-region and
/// DCT-scaled JPEG decoding) and augmented with a SampleRandom seeded by
/// sample_seed(seed, epoch, i), so it is the same for any number of loader
/// threads and differs between epochs. Make one view per epoch.
class TransformedImageFolder : public Dataset {
 public:
  TransformedImageFolder(std::shared_ptr<const ImageFolder> folder, std::shared_ptr<const Compose> pipeline,
                         uint64_t seed, int64_t epoch);

  int64_t size() const override { return folder_->size(); }
  /// Errors (unreadable or corrupt file) are DataError naming the path.
  Example get(int64_t index) const override;

 private:
  std::shared_ptr<const ImageFolder> folder_;
  std::shared_ptr<const Compose> pipeline_;
  uint64_t seed_;
  int64_t epoch_;
};

}  // namespace fulgur
