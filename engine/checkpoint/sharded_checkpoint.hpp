#pragma once

#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace fulgur {

/// A sharded checkpoint (`fsdp.state_dict_type: sharded`) is two kinds of
/// file. Every rank r of N writes its rows of every sharded parameter and
/// of their optimizer state to `<path>.<id>.shard-<r>-of-<N>`; once all of
/// them are on disk, rank 0 writes `<path>` itself: the usual checkpoint
/// without those tensors, plus the metadata under kShardsKey
/// (`world_size`, `id`, `name`: the file name the shards are named after,
/// so a link to `<path>` such as last.ckpt finds them; `shapes` of the sharded parameters,
/// `optimizer_params`: per optimizer, the parameter name of each state
/// index). Every file is written atomically (CheckpointIO), and `<path>`
/// last, so a checkpoint whose metadata exists is complete unless a shard
/// was removed since, which consolidate() reports by name. `<id>` is new
/// for every save: a save interrupted half-way never mixes with the
/// previous one's shards.
constexpr const char* kShardsKey = "fsdp_shards";

/// A mesh's sharded checkpoint (`model_parallel.state_dict_type: sharded`,
/// written by MeshShardedCheckpoint) has the same files, named alike: the
/// ranks of dp 0 and cp 0 (the others hold copies) write their parts as
/// they hold them, `<path>.<id>.shard-<r>-of-<N>` with `state_dict` (each
/// tensor this rank holds, tp slices as they are), `splits` (a parameter's
/// dimension split over tp, or -1), `tp_rank`, and `optimizer_states` (per
/// optimizer, each parameter's state by name); rank 0 then writes `<path>`:
/// the checkpoint without those tensors, with this key holding `world_size`,
/// `id`, `name`, `writers` (the ranks that wrote a part) and
/// `optimizer_params` (per optimizer, the parameter name of each state
/// index in one process's numbering). Consolidated, a parameter is its tp
/// slices joined along its split dimension in tp order.
constexpr const char* kMeshShardsKey = "mesh_shards";

class Strategy;
/// A fresh id for one save, the same on every rank (a collective): its
/// shards never mix with an earlier save's of the same path.
std::string agreed_save_id(Strategy& strategy);

/// Rank 0's last write of a sharded save `id` of `world` ranks, once every
/// shard is on disk: `checkpoint` with `meta` (`world_size`, `id` and
/// `name` added) under `key`, at `path`; then the shards of earlier saves
/// to `path` are removed.
void save_shard_metadata(Checkpoint checkpoint, const char* key, c10::impl::GenericDict meta, int64_t world,
                         const std::string& id, const std::filesystem::path& path);

/// Where rank `rank` of `world` writes its shard of the save `id` of `path`.
std::filesystem::path shard_file(const std::filesystem::path& path, const std::string& id, int64_t rank,
                                 int64_t world);

/// Whether `checkpoint` (what CheckpointIO::load read at a path) is the
/// metadata of a sharded checkpoint (fsdp's or a mesh's).
bool is_sharded_checkpoint(const Checkpoint& checkpoint);

/// Whether every shard the metadata at `path` names exists.
bool shards_complete(const Checkpoint& metadata, const std::filesystem::path& path);

/// The whole checkpoint: the metadata's content with every sharded
/// parameter and optimizer state tensor joined from the shards in rank
/// order, in the layout of an unsharded checkpoint (what
/// `torch.load(weights_only=True)` reads, and any world size resumes from).
/// Throws CheckpointError naming a missing or corrupt shard.
Checkpoint consolidate_sharded_checkpoint(const Checkpoint& metadata, const std::filesystem::path& path);

/// Removes the shard files named after `path`, except those of its save
/// `keep_id` (earlier saves to the same path); all of them when it is empty.
void remove_shards(const std::filesystem::path& path, const std::string& keep_id = "");

/// Removes the checkpoint at `path`: the file, then any shard files named after it.
void remove_checkpoint(const std::filesystem::path& path);

}  // namespace fulgur
