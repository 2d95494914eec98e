#!/usr/bin/env bash
# bench/mpi_wait.sh BUILD_DIR [SECONDS]: the CPU a rank uses while it waits
# at a barrier for a straggler (the last of 2 ranks computes SECONDS first,
# default 10), over process_group_backend mpi (mpi_probe straggler), beside
# the same wait in Open MPI's own blocking MPI_Barrier (a C program built here
# with mpicc): the peer. Prints both and their ratio. Record them in
# bench/RESULTS.md with the load average.
set -euo pipefail
build="$(cd "${1:-build}" && pwd)"
seconds="${2:-10}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/peer.c" <<'C'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
static double cpu(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(int argc, char** argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Barrier(MPI_COMM_WORLD);
  double c = cpu(), w = now();
  if (rank == size - 1) usleep((useconds_t)(atof(argv[1]) * 1e6));
  MPI_Barrier(MPI_COMM_WORLD);
  w = now() - w;
  c = cpu() - c;
  if (rank == 0) printf("rank 0: waited %g s at the barrier, CPU %g s (%g %% of a core)\n", w, c, 100 * c / w);
  MPI_Finalize();
  return 0;
}
C
mpicc -O2 -o "$work/peer" "$work/peer.c"
mpirun=(env -u MASTER_ADDR -u MASTER_PORT mpirun --allow-run-as-root --oversubscribe -np 2)
percent() { sed -n 's/.*(\([0-9.e+-]*\) % of a core).*/\1/p'; }
ours="$("${mpirun[@]}" "$build/bin/mpi_probe" straggler "$seconds" | grep '^rank 0')"
peer="$("${mpirun[@]}" "$work/peer" "$seconds" | grep '^rank 0')"
echo "fulgur mpi barrier: $ours"
echo "Open MPI MPI_Barrier: $peer"
awk -v a="$(percent <<< "$ours")" -v b="$(percent <<< "$peer")" \
  'BEGIN { printf "mpi_wait: fulgur uses %.4f of the CPU Open MPI'"'"'s own barrier uses while waiting\n", a / b }'
