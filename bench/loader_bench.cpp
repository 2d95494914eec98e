// Throughput of the image input pipeline: class folders (ImageFileList) +
// a pipeline in an ImageDataset + one DatasetLoader whose set_epoch selects
// each epoch's augmentation, as a training job would iterate it.
//
//   loader_bench ROOT --pipeline imagenet-train|imagenet-val|cinic-train
//                [--batch_size 64] [--num_workers 2] [--batches 50] [--seed 0]
//
// ROOT holds one folder per class. The first batch (thread start-up) is not
// timed. Prints "loader_bench: <pipeline> <x> img/s" and the peak RSS.
#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/datasets/cinic10.hpp>
#include <fulgur/datamodules/datasets/imagenet_pipelines.hpp>
#include <fulgur/datamodules/images/image_dataset.hpp>
#include <fulgur/datamodules/images/image_file_list.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <string>

// One of the programs in a multi-call binary (started through bin/loader_bench).
namespace loader_bench {

using namespace fulgur;

namespace {

std::shared_ptr<const Compose> make_pipeline(const std::string& name) {
  // The DataModules' own pipelines, so the benchmark measures what trains.
  if (name == "imagenet-train") return imagenet_train_pipeline();
  if (name == "imagenet-val") return imagenet_eval_pipeline();
  // CINIC10 with augment: RandomCrop(32, 4) + flip, CINIC-10 statistics.
  if (name == "cinic-train") return CINIC10::train_pipeline(CINIC10Options("unused").augment(true));
  throw std::invalid_argument("--pipeline: expected imagenet-train, imagenet-val or cinic-train, got '" + name + "'");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]).rfind("--", 0) == 0) {
    std::cerr << "usage: loader_bench ROOT --pipeline imagenet-train|imagenet-val|cinic-train [--batch_size B] "
                 "[--num_workers N] [--batches K] [--seed S]\n";
    return 2;
  }
  std::map<std::string, std::string> args = {
      {"--pipeline", "imagenet-train"}, {"--batch_size", "64"}, {"--num_workers", "2"}, {"--batches", "50"},
      {"--seed", "0"}};
  for (int i = 2; i < argc; i += 2) {
    if (!args.count(argv[i]) || i + 1 >= argc) {
      std::cerr << "error: unknown option or missing value: " << argv[i] << "\n";
      return 2;
    }
    args[argv[i]] = argv[i + 1];
  }
  try {
    // Each loader thread decodes alone; no intra-op thread pools behind it.
    torch::set_num_threads(1);
    const std::string pipeline_name = args["--pipeline"];
    auto pipeline = make_pipeline(pipeline_name);
    auto source = std::make_shared<const ImageFileList>(ImageFileList::from_class_folders(argv[1]));
    const int64_t batches = std::stoll(args["--batches"]);
    const auto options = DatasetLoaderOptions(std::stoll(args["--batch_size"]))
                             .shuffle(true)
                             .drop_last(true)
                             .num_workers(std::stoll(args["--num_workers"]))
                             .seed(std::stoull(args["--seed"]));
    int64_t images = 0;
    int64_t done = 0;
    auto started = std::chrono::steady_clock::now();
    DatasetLoader loader(std::make_shared<ImageDataset>(source, pipeline, 1234), options);
    if (loader.size() == 0) throw std::invalid_argument("fewer images than one batch in " + std::string(argv[1]));
    for (int64_t epoch = 0; done <= batches; ++epoch) {
      loader.set_epoch(epoch);
      auto it = loader.iterate();
      while (done <= batches) {
        auto batch = it->next();
        if (!batch) break;
        if (done == 0) {
          started = std::chrono::steady_clock::now();  // after the warm-up batch
        } else {
          images += batch->size();
        }
        ++done;
      }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    std::printf("loader_bench: %s %.1f img/s\n", pipeline_name.c_str(), static_cast<double>(images) / seconds);
    std::printf("loader_bench: peak RSS %.1f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024.0);
    return 0;
  } catch (const DataError& error) {
    std::cerr << "error: " << error.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& error) {
    std::cerr << "error: " << error.what() << "\n";
    return 2;
  }
}

}  // namespace loader_bench
