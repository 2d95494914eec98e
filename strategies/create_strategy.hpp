#pragma once

#include <fulgur/strategies/accelerator_kind.hpp>
#include <fulgur/strategies/environments/cluster_environment.hpp>
#include <fulgur/strategies/options/ddp_options.hpp>
#include <fulgur/strategies/options/fsdp_options.hpp>
#include <fulgur/strategies/options/model_parallel_options.hpp>
#include <fulgur/strategies/model_parallel/device_mesh.hpp>
#include <fulgur/strategies/options/horovod_options.hpp>
#include <fulgur/strategies/precision_mode.hpp>
#include <fulgur/strategies/options/process_group_backend.hpp>
#include <fulgur/strategies/strategy.hpp>
#include <fulgur/strategies/strategy_kind.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace fulgur {

/// What a Strategy is made from: its kind (never Auto), accelerator and
/// precision and, for the data-parallel kinds, who this process is and
/// the option sections the components take as they are.
struct StrategySpec {
  StrategyKind kind = StrategyKind::SingleDevice;
  AcceleratorKind accelerator = AcceleratorKind::Cpu;
  PrecisionMode precision = PrecisionMode::Full32;
  /// This process's rank and rendezvous; required by the data-parallel kinds.
  const ClusterEnvironment* environment = nullptr;
  /// Seconds a collective may wait for a peer.
  double process_group_timeout = 1800.0;
  /// The collectives' backend (Auto: NCCL for CUDA tensors, else Gloo).
  ProcessGroupBackend process_group_backend = ProcessGroupBackend::Auto;
  /// Chrome-trace file of the gradient collectives ("" = none).
  std::string timeline_path;
  /// The unused-parameter switch of every data-parallel kind is ddp's.
  DDPOptions ddp;
  FSDPOptions fsdp;
  HorovodOptions horovod;
  ModelParallelOptions model_parallel;
};

/// The mesh strategy model_parallel runs on `world_size` processes:
/// data_parallel_size auto is what tp x cp leave; sizes that do not fit
/// the world are one error naming the numbers.
DeviceMesh::Shape model_parallel_mesh(const ModelParallelOptions& options, int64_t world_size);

/// The one strategy factory: SingleDeviceStrategy, or the data-parallel
/// strategy (DDP, FSDP or Horovod) `spec.kind` names on the process group
/// its environment describes (the node's ranks are HYBRID_SHARD's shard group).
std::unique_ptr<Strategy> create_strategy(const StrategySpec& spec);

}  // namespace fulgur
