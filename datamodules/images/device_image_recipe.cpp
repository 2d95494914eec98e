#include <fulgur/datamodules/images/device_image_recipe.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace fulgur {

namespace {

namespace F = torch::nn::functional;

// uint8 [h, w, 3] -> float [1, 3, h, w]
torch::Tensor to_float_nchw(const torch::Tensor& hwc) { return hwc.permute({2, 0, 1}).unsqueeze(0).to(torch::kFloat32); }

torch::Tensor resize(const torch::Tensor& nchw, int64_t height, int64_t width) {
  if (nchw.size(2) == height && nchw.size(3) == width) return nchw;
  return F::interpolate(nchw, F::InterpolateFuncOptions()
                                  .size(std::vector<int64_t>{height, width})
                                  .mode(torch::kBilinear)
                                  .align_corners(false)
                                  .antialias(true));
}

}  // namespace

DeviceImageRecipe::DeviceImageRecipe(int64_t crop_size, std::vector<double> mean, std::vector<double> std)
    : crop_size_(crop_size), mean_(std::move(mean)), std_(std::move(std)) {
  if (crop_size < 1) {
    throw std::invalid_argument("[DeviceImageRecipe] crop_size must be >= 1, got " + std::to_string(crop_size));
  }
  if (mean_.size() != 3 || std_.size() != 3) {
    throw std::invalid_argument("[DeviceImageRecipe] mean and std need 3 values (RGB), got " +
                                std::to_string(mean_.size()) + " and " + std::to_string(std_.size()));
  }
}

DeviceImageRecipe DeviceImageRecipe::train(int64_t crop_size, std::vector<double> mean, std::vector<double> std) {
  DeviceImageRecipe recipe(crop_size, std::move(mean), std::move(std));
  recipe.random_crop_.emplace(crop_size);
  return recipe;
}

DeviceImageRecipe DeviceImageRecipe::eval(int64_t resize_size, int64_t crop_size, std::vector<double> mean,
                                          std::vector<double> std) {
  if (resize_size < crop_size) {
    throw std::invalid_argument("[DeviceImageRecipe::eval] expected crop_size <= resize_size, got crop_size " +
                                std::to_string(crop_size) + " and resize_size " + std::to_string(resize_size));
  }
  DeviceImageRecipe recipe(crop_size, std::move(mean), std::move(std));
  recipe.resize_.emplace(resize_size);
  recipe.center_crop_.emplace(crop_size);
  return recipe;
}

DeviceImagePlan DeviceImageRecipe::plan(int64_t height, int64_t width, SampleRandom& random) const {
  DeviceImagePlan plan;
  if (random_crop_) {
    // The CPU pipeline's order of draws: the crop window, then the flip.
    const CropBox box = random_crop_->sample_box(height, width, random);
    plan.region = {box.top, box.left, box.height, box.width, 0, 0};
    plan.flip = uniform_real(random, 0.0, 1.0) < 0.5;
  }
  return plan;
}

torch::Tensor DeviceImageRecipe::finish(const torch::Tensor& decoded, const DeviceImagePlan& plan,
                                        int64_t source_height, int64_t source_width) const {
  torch::Tensor image = to_float_nchw(decoded);
  if (random_crop_) {
    image = resize(image, crop_size_, crop_size_);
  } else {
    const auto [height, width] = resize_->output_size(source_height, source_width);
    image = resize(image, height, width);
    // CenterCrop's window; where the image is smaller, zeros around it.
    const CropBox box = center_crop_->window(height, width);
    const int64_t top = std::max<int64_t>(0, box.top);
    const int64_t left = std::max<int64_t>(0, box.left);
    const int64_t rows = std::min(box.height, height - top);
    const int64_t cols = std::min(box.width, width - left);
    image = image.narrow(2, top, rows).narrow(3, left, cols);
    if (rows < box.height || cols < box.width) {
      const int64_t pad_top = top - box.top;
      const int64_t pad_left = left - box.left;
      image = F::pad(image, F::PadFuncOptions({pad_left, box.width - cols - pad_left, pad_top, box.height - rows - pad_top}));
    }
  }
  if (plan.flip) image = image.flip({3});
  return image.squeeze(0);
}

torch::Tensor DeviceImageRecipe::normalize(const std::vector<torch::Tensor>& images) const {
  torch::Tensor batch = torch::stack(images);
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(batch.device());
  // float32 mean and std, as Normalize rounds them.
  const torch::Tensor mean = torch::tensor(std::vector<float>(mean_.begin(), mean_.end())).to(options).view({1, 3, 1, 1});
  const torch::Tensor std = torch::tensor(std::vector<float>(std_.begin(), std_.end())).to(options).view({1, 3, 1, 1});
  return batch.div_(255.0f).sub_(mean).div_(std);
}

}  // namespace fulgur
