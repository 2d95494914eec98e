#include <fulgur/engine/checkpoint/optimizer_state.hpp>

#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <fmt/format.h>

#include <map>
#include <stdexcept>
#include <typeinfo>

namespace fulgur {
namespace {

using Dict = c10::impl::GenericDict;

[[noreturn]] void mismatch(const std::string& what) {
  throw std::invalid_argument("[load_optimizer_state_dict] " + what);
}

c10::IValue get(const Dict& dict, const std::string& key, const char* where) {
  if (!dict.contains(key)) mismatch(fmt::format("'{}' is missing from {}", key, where));
  return dict.at(key);
}

double get_double(const Dict& dict, const std::string& key) {
  const c10::IValue v = get(dict, key, "a param group");
  if (v.isDouble()) return v.toDouble();
  if (v.isInt()) return static_cast<double>(v.toInt());
  mismatch(fmt::format("param group entry '{}' is not a number", key));
}

bool get_bool(const Dict& dict, const std::string& key) {
  const c10::IValue v = get(dict, key, "a param group");
  if (!v.isBool()) mismatch(fmt::format("param group entry '{}' is not a bool", key));
  return v.toBool();
}

/// PyTorch keeps `step` as a float tensor; accept an int too.
int64_t get_step(const Dict& dict) {
  const c10::IValue v = get(dict, "step", "a parameter's state");
  if (v.isTensor()) return static_cast<int64_t>(v.toTensor().item<double>());
  if (v.isInt()) return v.toInt();
  mismatch("'step' is neither a tensor nor an int");
}

c10::IValue step_tensor(int64_t step) { return torch::tensor(static_cast<float>(step)); }

/// A state tensor, moved to its parameter's device; undefined when absent or None.
torch::Tensor get_tensor(const Dict& dict, const std::string& key, const torch::Tensor& param, bool required) {
  if (!dict.contains(key) || dict.at(key).isNone()) {
    if (required) mismatch(fmt::format("'{}' is missing from a parameter's state", key));
    return {};
  }
  const c10::IValue v = dict.at(key);
  if (!v.isTensor()) mismatch(fmt::format("'{}' is not a tensor", key));
  torch::Tensor t = v.toTensor();
  if (t.sizes() != param.sizes()) {
    mismatch(fmt::format("'{}' has {} elements but its parameter has {}", key, t.numel(), param.numel()));
  }
  return t.to(param.device(), param.scalar_type());
}

void put_tensor(Dict& dict, const std::string& key, const torch::Tensor& t) {
  if (t.defined()) dict.insert(key, t);
}

/// The per-type pieces: options <-> param group entries, state <-> dict.
struct Codec {
  virtual ~Codec() = default;
  virtual void save_options(const torch::optim::OptimizerOptions& options, Dict& group) const = 0;
  virtual void load_options(const Dict& group, torch::optim::OptimizerOptions& options) const = 0;
  virtual Dict save_state(const torch::optim::OptimizerParamState& state) const = 0;
  virtual std::unique_ptr<torch::optim::OptimizerParamState> load_state(const Dict& state,
                                                                         const torch::Tensor& param) const = 0;
};

struct SGDCodec : Codec {
  void save_options(const torch::optim::OptimizerOptions& o, Dict& g) const override {
    const auto& s = static_cast<const torch::optim::SGDOptions&>(o);
    g.insert("lr", s.lr());
    g.insert("momentum", s.momentum());
    g.insert("dampening", s.dampening());
    g.insert("weight_decay", s.weight_decay());
    g.insert("nesterov", s.nesterov());
  }
  void load_options(const Dict& g, torch::optim::OptimizerOptions& o) const override {
    auto& s = static_cast<torch::optim::SGDOptions&>(o);
    s.lr(get_double(g, "lr")).momentum(get_double(g, "momentum")).dampening(get_double(g, "dampening"));
    s.weight_decay(get_double(g, "weight_decay")).nesterov(get_bool(g, "nesterov"));
  }
  Dict save_state(const torch::optim::OptimizerParamState& st) const override {
    Dict d = new_state_dict();
    put_tensor(d, "momentum_buffer", static_cast<const torch::optim::SGDParamState&>(st).momentum_buffer());
    return d;
  }
  std::unique_ptr<torch::optim::OptimizerParamState> load_state(const Dict& d, const torch::Tensor& p) const override {
    auto st = std::make_unique<torch::optim::SGDParamState>();
    st->momentum_buffer(get_tensor(d, "momentum_buffer", p, false));
    return st;
  }
};

template <class Options, class State>
struct AdamCodec : Codec {
  void save_options(const torch::optim::OptimizerOptions& o, Dict& g) const override {
    const auto& s = static_cast<const Options&>(o);
    g.insert("lr", s.lr());
    g.insert("betas", c10::ivalue::Tuple::create({std::get<0>(s.betas()), std::get<1>(s.betas())}));
    g.insert("eps", s.eps());
    g.insert("weight_decay", s.weight_decay());
    g.insert("amsgrad", s.amsgrad());
  }
  void load_options(const Dict& g, torch::optim::OptimizerOptions& o) const override {
    auto& s = static_cast<Options&>(o);
    const c10::IValue betas = get(g, "betas", "a param group");
    std::vector<c10::IValue> pair;
    if (betas.isTuple()) pair = betas.toTupleRef().elements().vec();
    if (betas.isList()) pair = betas.toList().vec();
    if (pair.size() != 2 || !pair[0].isDouble() || !pair[1].isDouble()) mismatch("'betas' is not a pair of numbers");
    s.lr(get_double(g, "lr")).betas({pair[0].toDouble(), pair[1].toDouble()}).eps(get_double(g, "eps"));
    s.weight_decay(get_double(g, "weight_decay")).amsgrad(get_bool(g, "amsgrad"));
  }
  Dict save_state(const torch::optim::OptimizerParamState& base) const override {
    const auto& st = static_cast<const State&>(base);
    Dict d = new_state_dict();
    d.insert("step", step_tensor(st.step()));
    put_tensor(d, "exp_avg", st.exp_avg());
    put_tensor(d, "exp_avg_sq", st.exp_avg_sq());
    put_tensor(d, "max_exp_avg_sq", st.max_exp_avg_sq());
    return d;
  }
  std::unique_ptr<torch::optim::OptimizerParamState> load_state(const Dict& d, const torch::Tensor& p) const override {
    auto st = std::make_unique<State>();
    st->step(get_step(d));
    st->exp_avg(get_tensor(d, "exp_avg", p, true));
    st->exp_avg_sq(get_tensor(d, "exp_avg_sq", p, true));
    st->max_exp_avg_sq(get_tensor(d, "max_exp_avg_sq", p, false));
    return st;
  }
};

struct RMSpropCodec : Codec {
  void save_options(const torch::optim::OptimizerOptions& o, Dict& g) const override {
    const auto& s = static_cast<const torch::optim::RMSpropOptions&>(o);
    g.insert("lr", s.lr());
    g.insert("alpha", s.alpha());
    g.insert("eps", s.eps());
    g.insert("weight_decay", s.weight_decay());
    g.insert("momentum", s.momentum());
    g.insert("centered", s.centered());
  }
  void load_options(const Dict& g, torch::optim::OptimizerOptions& o) const override {
    auto& s = static_cast<torch::optim::RMSpropOptions&>(o);
    s.lr(get_double(g, "lr")).alpha(get_double(g, "alpha")).eps(get_double(g, "eps"));
    s.weight_decay(get_double(g, "weight_decay")).momentum(get_double(g, "momentum")).centered(get_bool(g, "centered"));
  }
  Dict save_state(const torch::optim::OptimizerParamState& base) const override {
    const auto& st = static_cast<const torch::optim::RMSpropParamState&>(base);
    Dict d = new_state_dict();
    d.insert("step", step_tensor(st.step()));
    put_tensor(d, "square_avg", st.square_avg());
    put_tensor(d, "momentum_buffer", st.momentum_buffer());
    put_tensor(d, "grad_avg", st.grad_avg());
    return d;
  }
  std::unique_ptr<torch::optim::OptimizerParamState> load_state(const Dict& d, const torch::Tensor& p) const override {
    auto st = std::make_unique<torch::optim::RMSpropParamState>();
    st->step(get_step(d));
    st->square_avg(get_tensor(d, "square_avg", p, true));
    st->momentum_buffer(get_tensor(d, "momentum_buffer", p, false));
    st->grad_avg(get_tensor(d, "grad_avg", p, false));
    return st;
  }
};

struct AdagradCodec : Codec {
  void save_options(const torch::optim::OptimizerOptions& o, Dict& g) const override {
    const auto& s = static_cast<const torch::optim::AdagradOptions&>(o);
    g.insert("lr", s.lr());
    g.insert("lr_decay", s.lr_decay());
    g.insert("weight_decay", s.weight_decay());
    g.insert("initial_accumulator_value", s.initial_accumulator_value());
    g.insert("eps", s.eps());
  }
  void load_options(const Dict& g, torch::optim::OptimizerOptions& o) const override {
    auto& s = static_cast<torch::optim::AdagradOptions&>(o);
    s.lr(get_double(g, "lr")).lr_decay(get_double(g, "lr_decay")).weight_decay(get_double(g, "weight_decay"));
    s.initial_accumulator_value(get_double(g, "initial_accumulator_value")).eps(get_double(g, "eps"));
  }
  Dict save_state(const torch::optim::OptimizerParamState& base) const override {
    const auto& st = static_cast<const torch::optim::AdagradParamState&>(base);
    Dict d = new_state_dict();
    d.insert("step", step_tensor(st.step()));
    put_tensor(d, "sum", st.sum());
    return d;
  }
  std::unique_ptr<torch::optim::OptimizerParamState> load_state(const Dict& d, const torch::Tensor& p) const override {
    auto st = std::make_unique<torch::optim::AdagradParamState>();
    st->step(get_step(d));
    st->sum(get_tensor(d, "sum", p, true));
    return st;
  }
};

const Codec& codec_for(const torch::optim::Optimizer& optimizer, const char* caller) {
  static const SGDCodec sgd;
  static const AdamCodec<torch::optim::AdamOptions, torch::optim::AdamParamState> adam;
  static const AdamCodec<torch::optim::AdamWOptions, torch::optim::AdamWParamState> adamw;
  static const RMSpropCodec rmsprop;
  static const AdagradCodec adagrad;
  if (dynamic_cast<const torch::optim::SGD*>(&optimizer)) return sgd;
  if (dynamic_cast<const torch::optim::AdamW*>(&optimizer)) return adamw;
  if (dynamic_cast<const torch::optim::Adam*>(&optimizer)) return adam;
  if (dynamic_cast<const torch::optim::RMSprop*>(&optimizer)) return rmsprop;
  if (dynamic_cast<const torch::optim::Adagrad*>(&optimizer)) return adagrad;
  throw std::invalid_argument(fmt::format("[{}] cannot checkpoint an optimizer of type {}; supported: SGD, Adam, "
                                          "AdamW, RMSprop, Adagrad",
                                          caller, typeid(optimizer).name()));
}

}  // namespace

c10::impl::GenericDict optimizer_state_dict(const torch::optim::Optimizer& optimizer) {
  const Codec& codec = codec_for(optimizer, "optimizer_state_dict");
  Dict state(c10::IntType::get(), c10::AnyType::get());
  c10::impl::GenericList groups(c10::AnyType::get());
  int64_t index = 0;
  for (const auto& group : optimizer.param_groups()) {
    Dict entry = new_state_dict();
    codec.save_options(group.options(), entry);
    c10::impl::GenericList params(c10::AnyType::get());
    for (const auto& p : group.params()) {
      const auto found = optimizer.state().find(p.unsafeGetTensorImpl());
      if (found != optimizer.state().end()) state.insert(index, codec.save_state(*found->second));
      params.push_back(index++);
    }
    entry.insert("params", params);
    groups.push_back(entry);
  }
  Dict result = new_state_dict();
  result.insert("state", state);
  result.insert("param_groups", groups);
  return result;
}

void load_optimizer_state_dict(torch::optim::Optimizer& optimizer, const c10::impl::GenericDict& saved,
                               const std::function<torch::Tensor(const torch::Tensor&)>& state_like) {
  const Codec& codec = codec_for(optimizer, "load_optimizer_state_dict");
  const c10::IValue groups_value = get(saved, "param_groups", "the optimizer state");
  const c10::IValue state_value = get(saved, "state", "the optimizer state");
  if (!groups_value.isList() || !state_value.isGenericDict()) mismatch("'param_groups' or 'state' has the wrong type");
  const auto groups = groups_value.toList();
  const auto state = state_value.toGenericDict();
  auto& param_groups = optimizer.param_groups();
  if (groups.size() != param_groups.size()) {
    mismatch(fmt::format("the optimizer has {} parameter groups, the checkpoint {}", param_groups.size(),
                         groups.size()));
  }
  // Check everything first, so a mismatch leaves the optimizer untouched.
  std::vector<std::pair<void*, std::unique_ptr<torch::optim::OptimizerParamState>>> restored;
  int64_t index = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (!groups.get(g).isGenericDict()) mismatch("a param group is not a dict");
    const Dict group = groups.get(g).toGenericDict();
    const c10::IValue params = get(group, "params", "a param group");
    if (!params.isList() || params.toList().size() != param_groups[g].params().size()) {
      mismatch(fmt::format("parameter group {} has {} parameters, the checkpoint's a different number", g,
                           param_groups[g].params().size()));
    }
    for (const auto& p : param_groups[g].params()) {
      if (state.contains(index)) {
        if (!state.at(index).isGenericDict()) mismatch(fmt::format("state {} is not a dict", index));
        restored.emplace_back(p.unsafeGetTensorImpl(),
                              codec.load_state(state.at(index).toGenericDict(), state_like ? state_like(p) : p));
      }
      ++index;
    }
  }
  for (size_t g = 0; g < groups.size(); ++g) codec.load_options(groups.get(g).toGenericDict(), param_groups[g].options());
  optimizer.state().clear();
  for (auto& [key, st] : restored) optimizer.state()[key] = std::move(st);
}

std::vector<torch::Tensor> indexed_parameters(const torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> params;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) params.push_back(p);
  }
  return params;
}

std::vector<std::string> indexed_parameter_names(const torch::nn::Module& module,
                                                 const torch::optim::Optimizer& optimizer) {
  std::map<const void*, std::string> names;
  for (const auto& item : module.named_parameters()) names[item.value().unsafeGetTensorImpl()] = item.key();
  std::vector<std::string> out;
  for (const auto& p : indexed_parameters(optimizer)) {
    const auto found = names.find(p.unsafeGetTensorImpl());
    if (found == names.end()) throw std::invalid_argument("[checkpoint] an optimizer updates a tensor the module does not hold");
    out.push_back(found->second);
  }
  return out;
}

}  // namespace fulgur
