#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/datasets/cinic10.hpp>
#include <fulgur/datamodules/images/codecs/image_tensor.hpp>
#include <fulgur/datamodules/images/transforms/random_crop.hpp>
#include <fulgur/datamodules/images/transforms/random_horizontal_flip.hpp>
#include <fulgur/trainer/cli/config_error.hpp>
#include <fulgur/trainer/cli/config_section.hpp>
#include <fulgur/trainer/cli/options_yaml.hpp>

#include <ATen/CPUGeneratorImpl.h>

#include <doctest/doctest.h>

#include "support/test_support.hpp"
#include "support/write_png.hpp"

#include <map>
#include <string>
#include <vector>

namespace cinic10_test {

namespace fs = std::filesystem;
using fulgur::Batch;
using fulgur::CINIC10;
using fulgur::CINIC10Options;
using fulgur::DataError;
using fulgur::Stage;
using fulgur::cli::ConfigError;
using fulgur::cli::ConfigSection;
using fulgur::testing::TempDir;

namespace {

const std::vector<std::string> kClasses = {"airplane", "cat", "ship"};

/// A tiny dataset in the CINIC-10 layout: `per_class` 8x8 RGB images per
/// class in each split, kept in sample order (class-major, file order) so
/// tests can compute the expected tensors.
struct Fixture {
  explicit Fixture(const std::string& name, std::map<std::string, int> per_class = {{"train", 3}, {"valid", 2}, {"test", 1}})
      : dir(name) {
    uint64_t seed = 1;
    for (const auto& [split, count] : per_class) {
      for (const auto& cls : kClasses) {
        fs::create_directories(dir.path() / split / cls);
        for (int i = 0; i < count; ++i) {
          auto generator = at::make_generator<at::CPUGeneratorImpl>(seed++);
          auto image = torch::randint(0, 256, {8, 8, 3}, generator, torch::kUInt8);
          fulgur::testing::write_png(dir.path() / split / cls / ("img" + std::to_string(i) + ".png"), image);
          images[split].push_back(image);
        }
      }
    }
  }
  std::string root() const { return dir.path().string(); }
  TempDir dir;
  std::map<std::string, std::vector<torch::Tensor>> images;
};

std::vector<Batch> collect(fulgur::DataLoader& loader) {
  std::vector<Batch> batches;
  auto it = loader.iterate();
  while (auto batch = it->next()) batches.push_back(std::move(*batch));
  return batches;
}

torch::Tensor inputs_of(const std::vector<Batch>& batches) {
  std::vector<torch::Tensor> parts;
  for (const auto& b : batches) parts.push_back(b.input);
  return torch::cat(parts);
}

torch::Tensor targets_of(const std::vector<Batch>& batches) {
  std::vector<torch::Tensor> parts;
  for (const auto& b : batches) parts.push_back(b.target);
  return torch::cat(parts);
}

/// Normalisation computed independently, in double precision.
torch::Tensor expected_normalized(const torch::Tensor& hwc, const std::vector<double>& mean,
                                  const std::vector<double>& std) {
  auto out = torch::empty({3, hwc.size(0), hwc.size(1)}, torch::kFloat64);
  for (int64_t c = 0; c < 3; ++c) {
    out[c] = (hwc.select(2, c).to(torch::kFloat64) / 255.0 - mean[c]) / std[c];
  }
  return out.to(torch::kFloat32);
}

/// The module's evaluation pipeline (ToTensor + Normalize) on a uint8 HWC image.
torch::Tensor normalize(const CINIC10Options& options, const torch::Tensor& hwc) {
  fulgur::SampleRandom unused(0);
  return (*CINIC10::eval_pipeline(options))(fulgur::tensor_to_image(hwc), unused);
}

ConfigSection section_of(const std::string& yaml) { return ConfigSection(YAML::Load(yaml), "data"); }

std::string config_error_of(const std::string& yaml) {
  auto section = section_of(yaml);
  try {
    fulgur::cli::read_options<CINIC10Options>(section);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no ConfigError>";
}

}  // namespace

TEST_CASE("CINIC10: setup(Fit) loads train and valid; loaders have the expected sizes") {
  Fixture fixture("cinic_sizes");
  CINIC10 data(CINIC10Options(fixture.root()).batch_size(4).num_workers(0).shuffle(false));
  CHECK_THROWS_WITH_AS(data.classes(), "[CINIC10::classes] no split is set up yet; call setup() first",
                       std::logic_error);
  data.setup(Stage::Fit);
  CHECK(data.classes() == kClasses);
  CHECK(data.num_classes() == 3);
  REQUIRE(data.train_source() != nullptr);
  CHECK(data.train_source()->size() == 9);
  CHECK(data.val_source()->size() == 6);
  CHECK(data.test_source() == nullptr);

  auto train = data.train_dataloader();
  auto val = data.val_dataloader();
  CHECK(train->size() == 3);
  CHECK(val->size() == 2);
  const auto train_batches = collect(*train);
  CHECK(train_batches.back().size() == 1);  // drop_last is off
  CHECK(torch::equal(targets_of(train_batches), torch::tensor({0, 0, 0, 1, 1, 1, 2, 2, 2}, torch::kLong)));
  CHECK(inputs_of(train_batches).sizes() == torch::IntArrayRef({9, 3, 8, 8}));
  CHECK_THROWS_WITH_AS(data.test_dataloader(),
                       "[CINIC10::test_dataloader] the split is not set up; call setup(Stage::Test) first",
                       std::logic_error);

  data.setup(Stage::Test);
  CHECK(data.test_dataloader()->size() == 1);
  CHECK(data.predict_dataloader()->size() == 1);
  CHECK(torch::equal(targets_of(collect(*data.test_dataloader())), torch::tensor({0, 1, 2}, torch::kLong)));

  CINIC10 validate_only(CINIC10Options(fixture.root()).batch_size(4));
  validate_only.setup(Stage::Validate);
  CHECK(validate_only.val_dataloader()->size() == 2);
  CHECK_THROWS_WITH_AS(validate_only.train_dataloader(),
                       "[CINIC10::train_dataloader] the train split is not set up; call setup(Stage::Fit) first",
                       std::logic_error);
}

TEST_CASE("CINIC10: images become float CHW, scaled to [0, 1] and normalised per channel") {
  Fixture fixture("cinic_normalize");
  const CINIC10Options defaults;
  CHECK(defaults.mean() == std::vector<double>{0.47889522, 0.47227842, 0.43047404});
  CHECK(defaults.std() == std::vector<double>{0.24205776, 0.23828046, 0.25874835});
  CHECK(defaults.batch_size() == 128);
  CHECK(defaults.num_workers() == 2);
  CHECK_FALSE(defaults.augment());
  CHECK(defaults.crop_size() == 32);
  CHECK(defaults.shuffle());

  CINIC10 data(CINIC10Options(fixture.root()).batch_size(4).num_workers(2));
  data.setup(Stage::Fit);
  const auto valid = collect(*data.val_dataloader());
  const auto inputs = inputs_of(valid);
  REQUIRE(inputs.size(0) == 6);
  for (int64_t i = 0; i < 6; ++i) {
    CAPTURE(i);
    const auto expected = expected_normalized(fixture.images["valid"][i], defaults.mean(), defaults.std());
    CHECK(torch::allclose(inputs[i], expected, 1e-5, 1e-5));
  }
  // One value by hand: pixel (0, 0), green channel of the first valid image.
  const double v = fixture.images["valid"][0][0][0][1].item<uint8_t>();
  CHECK(inputs[0][1][0][0].item<float>() == doctest::Approx((v / 255.0 - 0.47227842) / 0.23828046).epsilon(1e-6));

  const auto unit = CINIC10Options(fixture.root()).num_workers(0).mean({0.5, 0.5, 0.5}).std({0.5, 0.5, 0.5});
  const auto white = torch::full({2, 2, 3}, 255, torch::kUInt8);
  CHECK(torch::allclose(normalize(unit, white), torch::ones({3, 2, 2})));
  CHECK(torch::allclose(normalize(unit, torch::zeros({2, 2, 3}, torch::kUInt8)), -torch::ones({3, 2, 2})));
}

TEST_CASE("CINIC10: augmentation crops with padding and flips, is fixed by (seed, epoch) and independent of num_workers") {
  Fixture fixture("cinic_augment", {{"train", 6}, {"valid", 1}, {"test", 1}});
  const auto options = CINIC10Options(fixture.root()).batch_size(5).num_workers(0).augment(true).crop_size(8).seed(11);

  CINIC10 data(CINIC10Options(options).shuffle(false));
  data.setup(Stage::Fit);
  auto train = data.train_dataloader();
  const auto epoch0 = inputs_of(collect(*train));
  REQUIRE(epoch0.size(0) == 18);
  CHECK(torch::equal(inputs_of(collect(*train)), epoch0));

  // Every image is an 8x8 window of its original padded by 1 (8 / 8) with
  // zeros, at (top, left) in [0, 2]^2, mirrored or not.
  const fulgur::RandomCrop crop(8, 1);
  const fulgur::RandomHorizontalFlip mirror(1.0);
  int moved = 0;
  int flipped = 0;
  for (int64_t i = 0; i < 18; ++i) {
    CAPTURE(i);
    const auto original = fulgur::tensor_to_image(fixture.images["train"][i]);
    bool matched = false;
    for (int64_t top = 0; top <= 2 && !matched; ++top) {
      for (int64_t left = 0; left <= 2 && !matched; ++left) {
        for (const bool flip : {false, true}) {
          fulgur::SampleRandom unused(0);
          fulgur::Image window = crop.crop_at(original, top, left);
          if (flip) window = mirror.apply(std::move(window), unused);
          if (torch::equal(epoch0[i], normalize(options, fulgur::image_to_tensor(std::move(window))))) {
            matched = true;
            moved += (top != 1 || left != 1) ? 1 : 0;
            flipped += flip ? 1 : 0;
            break;
          }
        }
      }
    }
    CHECK(matched);
  }
  CHECK(moved >= 9);  // 8 of 9 windows move the image; none would mean no augmentation
  CHECK(flipped >= 3);
  CHECK(flipped <= 15);

  train->set_epoch(1);
  const auto epoch1 = inputs_of(collect(*train));
  CHECK_FALSE(torch::equal(epoch1, epoch0));
  train->set_epoch(0);
  CHECK(torch::equal(inputs_of(collect(*train)), epoch0));

  // Same seed, shuffled, any worker count: the same batches.
  CINIC10 serial(options);
  serial.setup(Stage::Fit);
  auto serial_loader = serial.train_dataloader();
  serial_loader->set_epoch(3);
  const auto expected = collect(*serial_loader);
  CINIC10 threaded(CINIC10Options(options).num_workers(3));
  threaded.setup(Stage::Fit);
  auto threaded_loader = threaded.train_dataloader();
  threaded_loader->set_epoch(3);
  const auto got = collect(*threaded_loader);
  CHECK(torch::equal(inputs_of(got), inputs_of(expected)));
  CHECK(torch::equal(targets_of(got), targets_of(expected)));

  // Validation images are never augmented.
  const auto valid = inputs_of(collect(*data.val_dataloader()));
  CHECK(torch::equal(valid[0], normalize(options, fixture.images["valid"][0])));

  // A window larger than the padded images is one DataError naming the image.
  CINIC10 too_big(CINIC10Options(options).crop_size(16).shuffle(false));
  too_big.setup(Stage::Fit);
  const std::string first = (fs::path(fixture.root()) / "train" / "airplane" / "img0.png").string();
  CHECK_THROWS_WITH_AS(too_big.train_dataloader()->iterate()->next(),
                       ("[ImageDataset::get] transform failed on '" + first +
                        "': [RandomCrop::apply] a 8x8 image padded by 2 is smaller than the 16x16 crop")
                           .c_str(),
                       DataError);
}

TEST_CASE("CINIC10: an unset seed follows torch::manual_seed") {
  Fixture fixture("cinic_seed");
  const auto options = CINIC10Options(fixture.root()).batch_size(4).num_workers(0).augment(true).crop_size(8);
  CINIC10 data(options);
  data.setup(Stage::Fit);
  torch::manual_seed(21);
  const auto a = collect(*data.train_dataloader());
  torch::manual_seed(21);
  const auto b = collect(*data.train_dataloader());
  torch::manual_seed(22);
  const auto c = collect(*data.train_dataloader());
  CHECK(torch::equal(inputs_of(a), inputs_of(b)));
  CHECK(torch::equal(targets_of(a), targets_of(b)));
  CHECK_FALSE(torch::equal(inputs_of(a), inputs_of(c)));
}

TEST_CASE("CINIC10: a missing split folder is one DataError naming its path") {
  Fixture fixture("cinic_missing", {{"train", 1}, {"test", 1}});
  CINIC10 data(CINIC10Options(fixture.root()).num_workers(0));
  const std::string valid = (fs::path(fixture.root()) / "valid").string();
  CHECK_THROWS_WITH_AS(data.setup(Stage::Fit),
                       ("[CINIC10::setup] split folder '" + valid +
                        "' does not exist; CINIC-10 needs root/train, root/valid and root/test, each with one folder "
                        "of images per class")
                           .c_str(),
                       DataError);
  CHECK_THROWS_AS(data.setup(Stage::Validate), DataError);
  data.setup(Stage::Test);
  CHECK(data.test_dataloader()->size() == 1);

  // Splits must list the same classes, since labels are class indices.
  fs::create_directories(fs::path(fixture.root()) / "valid" / "airplane");
  fulgur::testing::write_png(fs::path(fixture.root()) / "valid" / "airplane" / "a.png", torch::zeros({8, 8, 3}, torch::kUInt8));
  CINIC10 mismatched(CINIC10Options(fixture.root()).num_workers(0));
  CHECK_THROWS_WITH_AS(mismatched.setup(Stage::Fit),
                       "[CINIC10::setup] split 'valid' has classes [airplane] but 'train' has [airplane, cat, ship]",
                       DataError);
}

TEST_CASE("CINIC10: options are validated at construction") {
  CHECK_THROWS_WITH_AS(CINIC10{CINIC10Options{}}, "[CINIC10Options] root must be given (it has no default), got \"\"",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(CINIC10(CINIC10Options("/data").batch_size(0)),
                       "[CINIC10Options] batch_size must be >= 1, got 0", std::invalid_argument);
  CHECK_THROWS_WITH_AS(CINIC10(CINIC10Options("/data").num_workers(-1)),
                       "[CINIC10Options] num_workers must be >= 0, got -1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(CINIC10(CINIC10Options("/data").mean({0.5, 0.5})),
                       "[CINIC10Options] mean must be a list of 3 numbers (one per RGB channel), got [0.5, 0.5]",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(CINIC10(CINIC10Options("/data").std({0.5, 0, 0.5})),
                       "[CINIC10Options] std must be a list of 3 positive numbers (one per RGB channel), got [0.5, 0, 0.5]",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(CINIC10(CINIC10Options("/data").seed(-1)), "[CINIC10Options] seed must be >= 0, got -1",
                       std::invalid_argument);
  // Construction touches no files: a root that does not exist fails only in setup().
  CINIC10 lazy(CINIC10Options("/does/not/exist"));
  CHECK_THROWS_AS(lazy.setup(Stage::Fit), DataError);
}

TEST_CASE("CINIC10Options from YAML: reads every key and rejects invalid values") {
  Fixture fixture("cinic_config");
  auto section = section_of("{root: '" + fixture.root() +
                            "', batch_size: 16, num_workers: 0, augment: true, crop_size: 24, shuffle: false, "
                            "mean: [0.1, 0.2, 0.3], std: [1, 2, 3], seed: 5}");
  const auto options = fulgur::cli::read_options<CINIC10Options>(section);
  CHECK(options.root() == fixture.root());
  CHECK(options.batch_size() == 16);
  CHECK(options.num_workers() == 0);
  CHECK(options.augment());
  CHECK(options.crop_size() == 24);
  CHECK_FALSE(options.shuffle());
  CHECK(options.mean() == std::vector<double>{0.1, 0.2, 0.3});
  CHECK(options.std() == std::vector<double>{1.0, 2.0, 3.0});
  CHECK(options.seed() == std::optional<int64_t>(5));
  CHECK(section.unread_keys().empty());

  // Defaults are recorded for --print_config.
  auto minimal = section_of("{root: /data/cinic10}");
  const auto defaults = fulgur::cli::read_options<CINIC10Options>(minimal);
  CHECK(defaults.batch_size() == 128);
  CHECK_FALSE(defaults.seed().has_value());
  CHECK(minimal.resolved()["batch_size"].as<int64_t>() == 128);
  CHECK(minimal.resolved()["num_workers"].as<int64_t>() == 2);
  CHECK(minimal.resolved()["mean"].size() == 3);
  CHECK(minimal.resolved()["seed"].IsNull());

  const std::string root = "root: /data, ";
  CHECK(config_error_of("{" + root + "batch_size: 0}") == "data.batch_size: must be >= 1, got 0");
  CHECK(config_error_of("{" + root + "num_workers: -2}") == "data.num_workers: must be >= 0, got -2");
  CHECK(config_error_of("{" + root + "mean: [0.5, 0.5]}") ==
        "data.mean: must be a list of 3 numbers (one per RGB channel), got [0.5, 0.5]");
  CHECK(config_error_of("{" + root + "std: [0.5, 0, 0.5]}") ==
        "data.std: must be a list of 3 positive numbers (one per RGB channel), got [0.5, 0, 0.5]");
  CHECK(config_error_of("{" + root + "seed: -1}") == "data.seed: must be >= 0, got -1");
  CHECK(config_error_of("{" + root + "seed: abc}") == "data.seed: expected an integer or null, got 'abc'");
  CHECK(config_error_of("{batch_size: 8}") == "data.root: must be given (it has no default), got \"\"");
  CHECK(config_error_of("{" + root + "batch_size: many}") == "data.batch_size: expected an integer, got 'many'");
  CHECK(config_error_of("{" + root + "batch: 8}") == "unknown key 'data.batch'");

  // The example configs' data sections hold only known keys.
  for (const char* config : {"/examples/cinic10/config.yaml", "/examples/cinic10/digits.yaml"}) {
    CAPTURE(config);
    ConfigSection example(YAML::LoadFile(std::string(FULGUR_SOURCE_DIR) + config)["data"], "data");
    CHECK_NOTHROW(fulgur::cli::read_options<CINIC10Options>(example));
  }

  // The CLI's path: the options read from the section build the module.
  auto cli_section = section_of("{root: '" + fixture.root() + "', batch_size: 4, num_workers: 0}");
  CINIC10 data(fulgur::cli::read_options<CINIC10::Options>(cli_section));
  data.setup(Stage::Fit);
  CHECK(data.train_dataloader()->size() == 3);
  CHECK(data.options().batch_size() == 4);
}

}  // namespace cinic10_test
