#pragma once

#include <fulgur/core/option_enum.hpp>
#include <fulgur/core/options.hpp>
#include <fulgur/strategies/options/fsdp_options.hpp>

#include <string>
#include <vector>

namespace fulgur {

/// What runs along the mesh's data-parallel dimension (`dp`) of
/// strategy model_parallel: today's FSDP (its own `fsdp` section) or DDP.
enum class DataParallelKind { FSDP, DDP };
inline std::vector<std::string> option_choices(DataParallelKind) { return {"fsdp", "ddp"}; }

/// The order in which a pipeline's stages run their micro-batches'
/// forward and backward passes (docs/model-parallel.md draws each).
enum class PipelineScheduleKind { GPipe, OneFOneB, Interleaved1F1B, ZeroBubble };
inline std::vector<std::string> option_choices(PipelineScheduleKind) {
  return {"gpipe", "1f1b", "interleaved_1f1b", "zero_bubble"};
}

// clang-format off
#define FULGUR_MODEL_PARALLEL_OPTIONS(X)                                                                       \
  X(int64_t, tensor_parallel_size, 1,                                                                         \
    "ranks a layer is split over (tp, the mesh's innermost dimension by default: keep it within a node)",     \
    fulgur::check::AtLeast{1})                                                                                \
  X(int64_t, context_parallel_size, 1,                                                                        \
    "ranks the sequence is split over (cp: ring attention)", fulgur::check::AtLeast{1})                        \
  X(std::string, data_parallel_size, "auto",                                                                  \
    "replicas of the model (dp); auto = world size / (tensor_parallel_size * context_parallel_size * pipeline_parallel_size)",        \
    fulgur::check::AutoOrCount{})                                                                             \
  X(fulgur::DataParallelKind, data_parallel, fulgur::DataParallelKind::FSDP,                                  \
    "what runs along dp: fsdp (its fsdp section applies) or ddp", fulgur::check::Any{})                        \
  X(std::string, mesh_order, "dp,cp,tp",                                                                      \
    "the mesh's dimensions from outermost to innermost (consecutive ranks differ in the last; pp is outside all)", \
    (fulgur::check::OneOf{{"dp,cp,tp", "dp,tp,cp", "cp,dp,tp", "cp,tp,dp", "tp,dp,cp", "tp,cp,dp"}}))           \
  X(int64_t, pipeline_parallel_size, 1,                                                                       \
    "stages the model is split into, one rank each (pp, the outermost dimension: it may cross nodes)",        \
    fulgur::check::AtLeast{1})                                                                                \
  X(fulgur::PipelineScheduleKind, pipeline_schedule, fulgur::PipelineScheduleKind::OneFOneB,                  \
    "gpipe, 1f1b, interleaved_1f1b (virtual_stages per rank) or zero_bubble (ZB-H1)", fulgur::check::Any{})    \
  X(int64_t, microbatches, 4, "micro-batches each batch is split into along a pipeline",                     \
    fulgur::check::AtLeast{1})                                                                                \
  X(int64_t, virtual_stages, 2, "stages each rank holds under interleaved_1f1b", fulgur::check::AtLeast{1})   \
  X(fulgur::StateDictType, state_dict_type, fulgur::StateDictType::Full,                                      \
    "full (rank 0 writes one whole file) or sharded (each rank of dp 0 and cp 0 writes its parts beside a "   \
    "metadata file; data_parallel ddp)", fulgur::check::Any{})
// clang-format on

/// The user's knobs of strategy model_parallel (`--trainer.model_parallel.*`),
/// with Lightning's ModelParallelStrategy names where it has them.
struct ModelParallelOptions {
  FULGUR_OPTIONS(ModelParallelOptions, FULGUR_MODEL_PARALLEL_OPTIONS)
};

}  // namespace fulgur
