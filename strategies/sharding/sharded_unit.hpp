#pragma once

#include <fulgur/modules/activation_checkpoint.hpp>
#include <fulgur/strategies/sharding/sharded_unit_hooks.hpp>

#include <torch/torch.h>

#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace fulgur {

namespace sharded_unit_detail {

/// The tensors in a forward's result (a tensor, a tuple or pair of them, a
/// vector of them; anything else holds none): where the strategy hooks the
/// gathering before the unit's backward.
inline void collect(const torch::Tensor& t, std::vector<torch::Tensor>& out);
inline void collect(const std::vector<torch::Tensor>& ts, std::vector<torch::Tensor>& out);
template <class... Ts>
void collect(const std::tuple<Ts...>& t, std::vector<torch::Tensor>& out);
template <class A, class B>
void collect(const std::pair<A, B>& p, std::vector<torch::Tensor>& out);
template <class T, class = std::enable_if_t<!std::is_convertible_v<const T&, const torch::Tensor&>>>
void collect(const T&, std::vector<torch::Tensor>&) {}

inline void collect(const torch::Tensor& t, std::vector<torch::Tensor>& out) { out.push_back(t); }
inline void collect(const std::vector<torch::Tensor>& ts, std::vector<torch::Tensor>& out) {
  out.insert(out.end(), ts.begin(), ts.end());
}
template <class... Ts>
void collect(const std::tuple<Ts...>& t, std::vector<torch::Tensor>& out) {
  std::apply([&](const auto&... item) { (collect(item, out), ...); }, t);
}
template <class A, class B>
void collect(const std::pair<A, B>& p, std::vector<torch::Tensor>& out) {
  collect(p.first, out);
  collect(p.second, out);
}

/// A forward with the wrapped module's own signature (one, non-template,
/// so the unit also goes into a Sequential).
template <class Unit, class Signature>
class Forward;

template <class Unit, class R, class C, class... Args>
class Forward<Unit, R (C::*)(Args...)> {
 public:
  R forward(Args... args) { return static_cast<Unit&>(*this).call(std::forward<Args>(args)...); }
};

template <class Unit, class R, class C, class... Args>
class Forward<Unit, R (C::*)(Args...) const> : public Forward<Unit, R (C::*)(Args...)> {};

}  // namespace sharded_unit_detail

/// Wraps a submodule as one unit of the fully sharded strategy (FSDP's
/// `wrap`): under FULL_SHARD its parameters are all-gathered just before
/// its forward, freed after it, gathered again just before its backward
/// and freed once its gradients are reduce-scattered, so a rank holds whole
/// parameters of about one unit at a time. Under any other strategy it is
/// the module itself. Its forward takes and returns what the wrapped
/// module's forward does (one forward, not overloaded; default arguments
/// must be passed). The wrapped module's parameters are named
/// `<name>.module.<parameter>`. With activation checkpointing on
/// (`set_activation_checkpointing`, or the Trainer's option) a forward of
/// tensors to one tensor keeps only its inputs and runs again in backward.
///
///   blocks->push_back(fulgur::ShardedUnit<Block>(Block(options)));
template <class Holder>
class ShardedUnitImpl
    : public torch::nn::Module,
      public ShardedUnitBase,
      public sharded_unit_detail::Forward<ShardedUnitImpl<Holder>, decltype(&Holder::ContainedType::forward)> {
 public:
  explicit ShardedUnitImpl(Holder inner) : module(register_module("module", std::move(inner))) {}

  Holder module;

 private:
  template <class, class>
  friend class sharded_unit_detail::Forward;

  /// The wrapped module's forward between the hooks.
  template <class... Args>
  auto call(Args&&... args) {
    if (hooks_ != nullptr) hooks_->before_forward(*this);
    auto out = run(std::forward<Args>(args)...);
    if (hooks_ != nullptr) {
      std::vector<torch::Tensor> tensors;
      sharded_unit_detail::collect(out, tensors);
      hooks_->after_forward(*this, tensors);
    }
    return out;
  }

  /// The wrapped forward, checkpointed where that is on and possible.
  template <class... Args>
  auto run(Args&&... args) {
    using Result = std::decay_t<decltype(module->forward(std::forward<Args>(args)...))>;
    if constexpr (std::is_same_v<Result, torch::Tensor> &&
                  (std::is_convertible_v<const std::decay_t<Args>&, const torch::Tensor&> && ...)) {
      if (checkpointing_ && torch::GradMode::is_enabled()) {
        const auto forward = [this](const std::vector<torch::Tensor>& in) {
          return std::vector<torch::Tensor>{forward_from(in, std::index_sequence_for<Args...>{})};
        };
        return checkpoint(forward, {torch::Tensor(args)...}, module->parameters()).front();
      }
    } else {
      if (checkpointing_) {
        throw std::logic_error("[ShardedUnit] activation checkpointing needs a forward that takes tensors and "
                               "returns one tensor");
      }
    }
    return module->forward(std::forward<Args>(args)...);
  }

  template <size_t... I>
  torch::Tensor forward_from(const std::vector<torch::Tensor>& in, std::index_sequence<I...>) {
    return module->forward(in[I]...);
  }
};

/// The holder of ShardedUnitImpl<Holder> (the TORCH_MODULE pattern for a template).
template <class Holder>
class ShardedUnit : public torch::nn::ModuleHolder<ShardedUnitImpl<Holder>> {
 public:
  using torch::nn::ModuleHolder<ShardedUnitImpl<Holder>>::ModuleHolder;
};

}  // namespace fulgur
