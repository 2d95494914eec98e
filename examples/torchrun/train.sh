#!/bin/bash
# Train an example (cinic10 by default, or EXAMPLE=imagenet) with processes
# started by torchrun (PyTorch's launcher) instead of SLURM. fulgur reads torchrun's variables (RANK,
# WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT); the
# program itself is unchanged. Run from the repository root.
#
# One machine, 4 GPUs:
#   bash examples/torchrun/train.sh
# Two machines, 4 GPUs each: run this on both, with the address of the first one:
#   NNODES=2 NODE_RANK=0 MASTER_ADDR=node0 bash examples/torchrun/train.sh   # on node0
#   NNODES=2 NODE_RANK=1 MASTER_ADDR=node0 bash examples/torchrun/train.sh   # on node1
# Without GPUs, the demo digits on 2 CPU processes:
#   NPROC=2 ACCELERATOR=cpu CONFIG=examples/cinic10/digits.yaml bash examples/torchrun/train.sh
#
# Extra arguments go to the program, e.g. `... train.sh --trainer.max_epochs 3`.
# SIGTERM to a rank (or to torchrun) makes every rank stop at the same step
# and exit with 143 after the normal stop path (the checkpoint); run the same
# command again to resume (a torchrun restart, --max-restarts, resumes by itself).
set -euo pipefail

NNODES="${NNODES:-1}"            # machines
NODE_RANK="${NODE_RANK:-0}"      # this machine's index, 0 .. NNODES-1
NPROC="${NPROC:-4}"              # processes (GPUs) per machine
MASTER_ADDR="${MASTER_ADDR:-127.0.0.1}"  # address of NODE_RANK 0, reachable from every machine
MASTER_PORT="${MASTER_PORT:-29500}"      # a free TCP port there
EXAMPLE="${EXAMPLE:-cinic10}"   # which example binary: cinic10 or imagenet
CONFIG="${CONFIG:-examples/$EXAMPLE/config.yaml}"
ACCELERATOR="${ACCELERATOR:-gpu}"
BUILD_DIR="${FULGUR_BUILD_DIR:-build}"  # where the program was built

# torchrun from PATH, else the project's venv (scripts/setup.sh creates it).
TORCHRUN="$(command -v torchrun || echo .venv/bin/torchrun)"

# --no-python: the program is a C++ binary, not a Python script.
exec "$TORCHRUN" --no-python --nnodes "$NNODES" --node-rank "$NODE_RANK" --nproc-per-node "$NPROC" \
  --master-addr "$MASTER_ADDR" --master-port "$MASTER_PORT" \
  "$BUILD_DIR/bin/$EXAMPLE" fit --config "$CONFIG" --trainer.accelerator "$ACCELERATOR" \
  --trainer.num_nodes "$NNODES" --trainer.devices "$NPROC" "$@"
