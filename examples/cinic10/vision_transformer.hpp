#pragma once

// A vision transformer (Dosovitskiy et al., 2021), the kind of model NERSC's
// model-parallel tutorial splits: images cut into patches, each patch
// embedded by a linear layer, a class token, learned positions, pre-norm
// blocks (attention, MLP) and a linear head. Its attention and MLP layers
// are fulgur's Shardable ones, so parallelize() splits them over the mesh's
// tensor-parallel ranks with the plan API alone; on one process, and
// under every other strategy, it is an ordinary ViT.
#include <fulgur/fulgur.hpp>

namespace examples {

struct ViTBlockImpl : torch::nn::Module {
  ViTBlockImpl(int64_t dim, int64_t heads) : heads(heads) {
    norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
    q = register_module("q", fulgur::ShardableLinear(dim, dim));
    k = register_module("k", fulgur::ShardableLinear(dim, dim));
    v = register_module("v", fulgur::ShardableLinear(dim, dim));
    proj = register_module("proj", fulgur::ShardableLinear(dim, dim));
    norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
    fc1 = register_module("fc1", fulgur::ShardableLinear(dim, 4 * dim));
    fc2 = register_module("fc2", fulgur::ShardableLinear(4 * dim, dim));
  }
  torch::Tensor forward(torch::Tensor x) {
    const torch::Tensor h = norm1->forward(x);
    auto split_heads = [&](const torch::Tensor& t) { return t.view({t.size(0), t.size(1), heads, -1}).transpose(1, 2); };
    const torch::Tensor attended =
        at::scaled_dot_product_attention(split_heads(q->forward(h)), split_heads(k->forward(h)), split_heads(v->forward(h)));
    x = x + proj->forward(attended.transpose(1, 2).reshape({attended.size(0), attended.size(2), -1}));
    return x + fc2->forward(torch::gelu(fc1->forward(norm2->forward(x))));
  }
  int64_t heads;  // this rank's, once split
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  fulgur::ShardableLinear q{nullptr}, k{nullptr}, v{nullptr}, proj{nullptr}, fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(ViTBlock);

struct VisionTransformerImpl : torch::nn::Module {
  /// Images of up to `max_side` pixels a side, cut into `patch` x `patch` patches.
  VisionTransformerImpl(int64_t channels, int64_t classes, int64_t patch = 4, int64_t dim = 64, int64_t depth = 4,
                        int64_t heads = 4, int64_t max_side = 32)
      : patch(patch) {
    embed = register_module("embed", torch::nn::Linear(channels * patch * patch, dim));
    cls = register_parameter("cls", torch::zeros({1, 1, dim}));
    const int64_t patches = (max_side / patch) * (max_side / patch);
    position = register_parameter("position", torch::randn({1, patches + 1, dim}) * 0.02);
    blocks = register_module("blocks", torch::nn::ModuleList());
    for (int64_t i = 0; i < depth; ++i) blocks->push_back(ViTBlock(dim, heads));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
    head = register_module("head", torch::nn::Linear(dim, classes));
  }
  torch::Tensor forward(const torch::Tensor& images) {
    // [B, C, H, W] -> [B, patches, C * patch * patch]
    const int64_t b = images.size(0);
    torch::Tensor x = images.unfold(2, patch, patch).unfold(3, patch, patch);  // [B, C, H/p, W/p, p, p]
    x = x.permute({0, 2, 3, 1, 4, 5}).reshape({b, -1, images.size(1) * patch * patch});
    x = torch::cat({cls.expand({b, 1, cls.size(2)}), embed->forward(x)}, 1);
    x = x + position.narrow(1, 0, x.size(1));
    for (const auto& block : *blocks) x = block->as<ViTBlock>()->forward(x);
    return head->forward(norm->forward(x).select(1, 0));  // the class token's
  }
  /// The Megatron plan over the mesh's tp: attention by heads, the MLP split;
  /// the patch embedding, positions, norms and head stay whole.
  void parallelize(fulgur::DeviceMesh& mesh) {
    using fulgur::ColwiseParallel, fulgur::RowwiseParallel;
    for (const auto& block : *blocks) {
      auto* b = block->as<ViTBlock>();
      b->heads = mesh.split("tp", b->heads, "heads");
    }
    fulgur::parallelize_module(*this, mesh, {{"blocks.*.q", ColwiseParallel()},
                                             {"blocks.*.k", ColwiseParallel()},
                                             {"blocks.*.v", ColwiseParallel()},
                                             {"blocks.*.proj", RowwiseParallel()},
                                             {"blocks.*.fc1", ColwiseParallel()},
                                             {"blocks.*.fc2", RowwiseParallel()}});
  }
  int64_t patch;
  torch::nn::Linear embed{nullptr}, head{nullptr};
  torch::Tensor cls, position;
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm norm{nullptr};
};
TORCH_MODULE(VisionTransformer);

}  // namespace examples
