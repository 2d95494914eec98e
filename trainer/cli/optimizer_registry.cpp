#include <fulgur/trainer/cli/optimizer_registry.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace fulgur::cli {
namespace {

using Parameters = std::vector<torch::Tensor>;

// PyTorch's `betas`: two numbers.
std::tuple<double, double> betas(ConfigSection& section) {
  const auto values = section.get<std::vector<double>>("betas", {0.9, 0.999});
  if (values.size() != 2) section.fail("betas", "two numbers, as [0.9, 0.999]", fmt::format("[{}]", fmt::join(values, ", ")));
  return {values[0], values[1]};
}

template <class Options>
Options adam_options(ConfigSection& section, double default_weight_decay) {
  Options o(section.get<double>("lr", 1e-3));
  o.betas(betas(section));
  o.eps(section.get<double>("eps", 1e-8));
  o.weight_decay(section.get<double>("weight_decay", default_weight_decay));
  o.amsgrad(section.get<bool>("amsgrad", false));
  return o;
}

/// A recipe that builds `Optimizer` over the parameters it is given, with options `o`.
template <class Optimizer, class Options>
std::shared_ptr<OptimizerRecipe> recipe(const Options& o) {
  return std::make_shared<OptimizerRecipe>(
      OptimizerRecipe{[o](const Parameters& p) { return std::make_shared<Optimizer>(p, o); }});
}

}  // namespace

OptimizerRegistry OptimizerRegistry::with_builtins() {
  OptimizerRegistry registry;
  registry.add("SGD", [](ConfigSection& s) {
    torch::optim::SGDOptions o(s.get<double>("lr", 1e-3));
    o.momentum(s.get<double>("momentum", 0.0));
    o.dampening(s.get<double>("dampening", 0.0));
    o.weight_decay(s.get<double>("weight_decay", 0.0));
    o.nesterov(s.get<bool>("nesterov", false));
    return recipe<torch::optim::SGD>(o);
  });
  registry.add("Adam", [](ConfigSection& s) {
    const auto o = adam_options<torch::optim::AdamOptions>(s, 0.0);
    return recipe<torch::optim::Adam>(o);
  });
  registry.add("AdamW", [](ConfigSection& s) {
    const auto o = adam_options<torch::optim::AdamWOptions>(s, 1e-2);
    return recipe<torch::optim::AdamW>(o);
  });
  registry.add("RMSprop", [](ConfigSection& s) {
    torch::optim::RMSpropOptions o(s.get<double>("lr", 1e-2));
    o.alpha(s.get<double>("alpha", 0.99));
    o.eps(s.get<double>("eps", 1e-8));
    o.weight_decay(s.get<double>("weight_decay", 0.0));
    o.momentum(s.get<double>("momentum", 0.0));
    o.centered(s.get<bool>("centered", false));
    return recipe<torch::optim::RMSprop>(o);
  });
  registry.add("Adagrad", [](ConfigSection& s) {
    torch::optim::AdagradOptions o(s.get<double>("lr", 1e-2));
    o.lr_decay(s.get<double>("lr_decay", 0.0));
    o.weight_decay(s.get<double>("weight_decay", 0.0));
    o.initial_accumulator_value(s.get<double>("initial_accumulator_value", 0.0));
    o.eps(s.get<double>("eps", 1e-10));
    return recipe<torch::optim::Adagrad>(o);
  });
  return registry;
}

}  // namespace fulgur::cli
