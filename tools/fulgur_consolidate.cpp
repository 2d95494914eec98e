// Joins a sharded checkpoint (--trainer.fsdp.state_dict_type sharded or
// --trainer.model_parallel.state_dict_type sharded: a metadata file plus
// the ranks' shard files) into one ordinary checkpoint
// file, the layout `torch.load(path, weights_only=True)` reads and any
// world size resumes from.
//
//   fulgur_consolidate SHARDED.ckpt OUT.ckpt
#include <fulgur/engine/checkpoint/checkpoint_error.hpp>
#include <fulgur/engine/checkpoint/checkpoint_io.hpp>
#include <fulgur/engine/checkpoint/sharded_checkpoint.hpp>

#include <iostream>
#include <string>
#include <vector>

namespace {

const char* kUsage =
    "usage: fulgur_consolidate SHARDED.ckpt OUT.ckpt\n"
    "Joins the shards of a sharded checkpoint (fsdp.state_dict_type or model_parallel.state_dict_type sharded)\n"
    "into one checkpoint file.\n";

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << kUsage;
    return 0;
  }
  if (args.size() != 2) {
    std::cerr << kUsage;
    return 2;
  }
  try {
    const fulgur::Checkpoint metadata = fulgur::CheckpointIO::load(args[0]);
    if (!fulgur::is_sharded_checkpoint(metadata)) {
      std::cerr << "fulgur_consolidate: " << args[0] << " is not a sharded checkpoint (it has no '"
                << fulgur::kShardsKey << "' or '" << fulgur::kMeshShardsKey << "' entry)" << std::endl;
      return 2;
    }
    fulgur::CheckpointIO::save(fulgur::consolidate_sharded_checkpoint(metadata, args[0]), args[1]);
    std::cout << "fulgur_consolidate: wrote " << args[1] << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "fulgur_consolidate: " << e.what() << std::endl;
    return 2;
  }
}
