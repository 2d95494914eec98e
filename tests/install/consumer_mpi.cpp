// A program that uses MPI itself beside the installed fulgur, as a
// simulation code does: it links its own MPI (find_package(MPI), MPI::MPI_C,
// OMPI_SKIP_MPICXX), begins MPI, and trains the line on its communicator
// (TrainerOptions::mpi_communicator) under mpirun. Each rank prints
// "rank=R world=N steps=S" and exits 0 when the fit reached the line.
#include "line_data.hpp"
#include "line_model.hpp"

#include <mpi.h>

#include <iostream>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int code = 1;
  {
    Line model(LineOptions().lr(0.1));
    Points data;
    fulgur::Trainer trainer(fulgur::TrainerOptions()
                                .max_steps(200)
                                .accelerator(fulgur::AcceleratorKind::Cpu)
                                .strategy(fulgur::StrategyKind::DDP)
                                .mpi_communicator(MPI_Comm_c2f(MPI_COMM_WORLD))
                                .logger(false)
                                .enable_checkpointing(false)
                                .enable_progress_bar(false));
    trainer.fit(model, data);
    torch::NoGradGuard no_grad;
    const double y = model.forward(torch::tensor({{0.5f}})).item<double>();
    std::cout << "rank=" << trainer.global_rank() << " world=" << trainer.world_size()
              << " steps=" << trainer.state().global_step() << " y(0.5)=" << y << std::endl;
    code = std::abs(y - 2.5) < 0.05 ? 0 : 1;
  }
  MPI_Finalize();  // the program began MPI, so it ends it (after fulgur's groups are gone)
  return code;
}
