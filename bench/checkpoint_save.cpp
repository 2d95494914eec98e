// Writing a full checkpoint (atomic: temp file, fsync, rename, directory
// fsync) of a ResNet-50-sized model with SGD-momentum state, against a bare
// torch::save of the same tensors (no fsync, no rename). The parameter
// shapes are ResNet-50's (25.6 M parameters, 161 tensors incl. BatchNorm
// buffers); runs alternate (ours, peer, ours, ...) and medians are compared.
// Then AsyncCheckpointIO: how long save() blocks the caller (the copy to
// reused host buffers) against the synchronous save (target <= 0.20).
//
//   build/bin/checkpoint_save [--runs 5] [--dir /tmp]
#include <fulgur/fulgur.hpp>
#include <fulgur/modules/state_dict.hpp>
#include <fulgur/engine/checkpoint/async_checkpoint_io.hpp>
#include <fulgur/engine/checkpoint/checkpoint_io.hpp>
#include <fulgur/engine/checkpoint/optimizer_state.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>

// One of the programs in a multi-call binary (started through bin/checkpoint_save).
namespace checkpoint_save {

namespace {

using Clock = std::chrono::steady_clock;

/// A conv + BatchNorm pair with torchvision's parameter shapes.
void conv_bn(torch::nn::Module& parent, const std::string& name, int64_t in, int64_t out, int64_t k,
             const std::string& bn_name) {
  parent.register_parameter(name + "_weight", torch::randn({out, in, k, k}) * 0.01);
  parent.register_parameter(bn_name + "_weight", torch::ones({out}));
  parent.register_parameter(bn_name + "_bias", torch::zeros({out}));
  parent.register_buffer(bn_name + "_running_mean", torch::zeros({out}));
  parent.register_buffer(bn_name + "_running_var", torch::ones({out}));
  parent.register_buffer(bn_name + "_num_batches_tracked", torch::zeros({}, torch::kLong));
}

/// A flat module holding ResNet-50's tensors. LibTorch forbids dots in
/// registered names, so '_' stands in for them; sizes are what matter here.
std::shared_ptr<torch::nn::Module> resnet50_shapes() {
  auto m = std::make_shared<torch::nn::Module>();
  auto add = [&](const std::string& name, int64_t in, int64_t out, int64_t k) {
    std::string n = name;
    std::replace(n.begin(), n.end(), '.', '_');
    conv_bn(*m, n + "_conv", in, out, k, n + "_bn");
  };
  add("stem", 3, 64, 7);
  const int64_t blocks[] = {3, 4, 6, 3};
  const int64_t widths[] = {64, 128, 256, 512};
  int64_t in = 64;
  for (int layer = 0; layer < 4; ++layer) {
    for (int64_t b = 0; b < blocks[layer]; ++b) {
      const std::string p = fmt::format("layer{}.{}", layer + 1, b);
      const int64_t w = widths[layer];
      add(p + ".1", in, w, 1);
      add(p + ".2", w, w, 3);
      add(p + ".3", w, w * 4, 1);
      if (b == 0) add(p + ".downsample", in, w * 4, 1);
      in = w * 4;
    }
  }
  m->register_parameter("fc_weight", torch::randn({1000, 2048}) * 0.01);
  m->register_parameter("fc_bias", torch::zeros({1000}));
  return m;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  std::filesystem::path dir = std::filesystem::temp_directory_path();
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--dir")) dir = argv[i + 1];
  }
  torch::manual_seed(0);
  auto model = resnet50_shapes();
  int64_t numel = 0;
  for (const auto& p : model->parameters()) numel += p.numel();

  // One SGD step gives every parameter a momentum buffer.
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  for (auto& p : model->parameters()) p.mutable_grad() = torch::ones_like(p);
  sgd.step();

  const auto work = dir / fmt::format("checkpoint_save_bench_{}", ::getpid());
  std::filesystem::create_directories(work);

  auto checkpoint = [&] {
    fulgur::Checkpoint c = fulgur::new_state_dict();
    c.insert(fulgur::CheckpointIO::kVersionKey, std::string(FULGUR_VERSION));
    auto weights = fulgur::new_state_dict();
    for (const auto& e : fulgur::state_dict(*model)) weights.insert(e.key(), e.value().detach());
    c.insert("state_dict", weights);
    c10::impl::GenericList optimizers(c10::AnyType::get());
    optimizers.push_back(fulgur::optimizer_state_dict(sgd));
    c.insert("optimizer_states", optimizers);
    return c;
  };
  auto ours = [&] { fulgur::CheckpointIO::save(checkpoint(), work / "ours.ckpt"); };
  // The peer: the same tensors (weights, buffers, momentum) in one torch::save.
  auto peer = [&] {
    std::vector<torch::Tensor> tensors;
    for (const auto& e : fulgur::state_dict(*model)) tensors.push_back(e.value().detach());
    for (const auto& p : model->parameters()) {
      const auto& state = static_cast<torch::optim::SGDParamState&>(*sgd.state().at(p.unsafeGetTensorImpl()));
      tensors.push_back(state.momentum_buffer());
    }
    torch::save(tensors, (work / "peer.pt").string());
  };
  auto seconds = [](auto&& f) {
    const auto start = Clock::now();
    f();
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  ours();  // warm the page cache and allocator once each
  peer();
  std::vector<double> ours_s, peer_s;
  for (int r = 0; r < runs; ++r) {
    ours_s.push_back(seconds(ours));
    peer_s.push_back(seconds(peer));
  }
  const double a = median(ours_s), b = median(peer_s);
  std::cerr << fmt::format("{} parameters, {:.1f} MB checkpoint, {:.1f} MB torch::save file\n", numel,
                           std::filesystem::file_size(work / "ours.ckpt") / 1e6,
                           std::filesystem::file_size(work / "peer.pt") / 1e6);
  std::cout << fmt::format("checkpoint_save: ours {:.3f} s, torch::save {:.3f} s, ratio {:.2f}", a, b, a / b)
            << std::endl;

  // Asynchronous: the first save allocates the host buffers; later ones reuse them.
  fulgur::AsyncCheckpointIO writer;
  writer.save(checkpoint(), work / "async.ckpt");
  writer.wait();
  std::vector<double> block_s;
  for (int r = 0; r < runs; ++r) {
    const fulgur::Checkpoint c = checkpoint();
    block_s.push_back(seconds([&] { writer.save(c, work / "async.ckpt"); }));
    writer.wait();  // a training step would run here; the bench waits so runs do not overlap
  }
  const double blocked = median(block_s);
  std::cout << fmt::format("checkpoint_save async: save() blocks {:.3f} s, synchronous save {:.3f} s, ratio {:.2f} "
                           "(target <= 0.20)",
                           blocked, a, blocked / a)
            << std::endl;
  std::filesystem::remove_all(work);
  return 0;
}

}  // namespace checkpoint_save
