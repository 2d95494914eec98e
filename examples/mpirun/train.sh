#!/bin/bash
# Train an example (cinic10 by default, or EXAMPLE=imagenet) with processes
# started by mpirun (Open MPI).
# By default MPI only starts the processes and numbers them
# (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK,
# ...); the training traffic goes over Gloo or NCCL, which meet at
# MASTER_ADDR:MASTER_PORT (passed to every process with -x). With
# BACKEND=mpi the traffic goes over this MPI too (process_group_backend mpi)
# and no MASTER_ADDR is needed. Run from the repository root.
#
# One machine, 4 GPUs:
#   bash examples/mpirun/train.sh
# Two machines, 4 GPUs each (hosts.txt lists them, "node0 slots=4" per line):
#   NNODES=2 HOSTFILE=hosts.txt MASTER_ADDR=node0 bash examples/mpirun/train.sh
# Without GPUs, the demo digits on 2 CPU processes, over MPI:
#   NPROC=2 ACCELERATOR=cpu BACKEND=mpi CONFIG=examples/cinic10/digits.yaml bash examples/mpirun/train.sh
#
# Extra arguments go to the program, e.g. `... train.sh --trainer.max_epochs 3`.
set -euo pipefail

NNODES="${NNODES:-1}"            # machines
NPROC="${NPROC:-4}"              # processes (GPUs) per machine
MASTER_ADDR="${MASTER_ADDR:-127.0.0.1}"  # the machine of rank 0, reachable from every machine
MASTER_PORT="${MASTER_PORT:-29500}"      # a free TCP port there
EXAMPLE="${EXAMPLE:-cinic10}"   # which example binary: cinic10 or imagenet
CONFIG="${CONFIG:-examples/$EXAMPLE/config.yaml}"
ACCELERATOR="${ACCELERATOR:-gpu}"
BACKEND="${BACKEND:-auto}"       # process_group_backend: auto (Gloo/NCCL), gloo, nccl or mpi
BUILD_DIR="${FULGUR_BUILD_DIR:-build}"  # where the program was built
# More mpirun options, e.g. MPIRUN_ARGS=--oversubscribe to run more processes than there are cores.
read -r -a extra_mpirun <<<"${MPIRUN_ARGS:-}"

hosts=()
[[ -n "${HOSTFILE:-}" ]] && hosts=(--hostfile "$HOSTFILE")
# Open MPI refuses to run as root unless told; harmless otherwise.
as_root=()
[[ $(id -u) -eq 0 ]] && as_root=(--allow-run-as-root)

# Gloo and NCCL meet at MASTER_ADDR:MASTER_PORT; MPI needs no rendezvous.
rendezvous=(-x MASTER_ADDR="$MASTER_ADDR" -x MASTER_PORT="$MASTER_PORT")
[[ "$BACKEND" == mpi ]] && rendezvous=()

exec mpirun "${as_root[@]}" "${hosts[@]}" "${extra_mpirun[@]}" -np $((NNODES * NPROC)) --map-by "ppr:${NPROC}:node" \
  "${rendezvous[@]}" \
  "$BUILD_DIR/bin/$EXAMPLE" fit --config "$CONFIG" --trainer.accelerator "$ACCELERATOR" \
  --trainer.process_group_backend "$BACKEND" --trainer.num_nodes "$NNODES" --trainer.devices "$NPROC" "$@"
