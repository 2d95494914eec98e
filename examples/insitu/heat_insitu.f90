! The in-situ example's driver in Fortran: the same 2D heat diffusion split
! by rows over the MPI ranks (halo rows exchanged with MPI), training a CNN
! surrogate described by a YAML file (surrogate.yaml) in the background
! through the fulgur_online module, then letting it step on its own and
! reporting its error against the solver.
!
!   mpirun -np 2 -x FULGUR_FILE_STORE=$PWD/rendezvous build/bin/heat_insitu_fortran examples/insitu/surrogate.yaml [GRID]
!
! GRID (default 64): the field is GRID x GRID, as the C++ driver's --grid.
program heat_insitu_fortran
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use fulgur_online
  implicit none

  integer, parameter :: rollout = 10
  integer :: nx = 64, ny = 64
  real(c_float), parameter :: alpha = 0.2
  type(fulgur_handle) :: h
  character(len=1024) :: config
  character(len=32) :: grid
  integer :: rank, nranks, rows, first_row, up, down, k
  integer(c_int64_t) :: steps, max_steps, sim_steps
  real(c_float), allocatable :: u(:, :), before(:, :), surrogate(:, :)
  real(c_float), allocatable :: x(:, :, :, :), y(:, :, :, :)
  real(c_double) :: local(2), total(2)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  call get_command_argument(1, config)
  if (len_trim(config) == 0) call fail("usage: heat_insitu_fortran CONFIG.yaml [GRID]")
  call get_command_argument(2, grid)
  if (len_trim(grid) > 0) then
    read(grid, *, iostat=k) nx
    if (k /= 0 .or. nx < 16) call fail("GRID '" // trim(grid) // "': expected a whole number of at least 16")
    ny = nx
  end if
  if (mod(nx, nranks) /= 0) call fail("the grid's rows must divide evenly over the ranks")
  rows = nx / nranks
  first_row = rank * rows
  up = merge(rank - 1, MPI_PROC_NULL, rank > 0)
  down = merge(rank + 1, MPI_PROC_NULL, rank + 1 < nranks)
  ! u(column, row): a row is contiguous, as in the C++ driver's [rows + 2, ny].
  allocate(u(ny, 0:rows + 1), before(ny, 0:rows + 1), surrogate(ny, 0:rows + 1))
  allocate(x(ny, rows + 2, 1, 1), y(ny, rows + 2, 1, 1))

  if (fulgur_create(trim(config), h) /= FULGUR_OK) call fail(fulgur_last_error())
  max_steps = 300
  call reset(1_c_int64_t)
  if (fulgur_start(h) /= FULGUR_OK) call fail(fulgur_last_error())
  sim_steps = 0
  do
    ! Every rank steps until every rank's training reached max_steps.
    if (fulgur_global_step(h, steps) /= FULGUR_OK) call fail(fulgur_last_error())
    call MPI_Allreduce(MPI_IN_PLACE, steps, 1, MPI_INTEGER8, MPI_MIN, MPI_COMM_WORLD)
    if (steps >= max_steps) exit
    before = u
    call solver_step()
    sim_steps = sim_steps + 1
    x(:, :, 1, 1) = before
    y(:, :, 1, 1) = u
    if (fulgur_push(h, x, y) /= FULGUR_OK) call fail(fulgur_last_error())
    if (mod(sim_steps, 25_c_int64_t) == 0) call reset(sim_steps + 1)
  end do
  if (fulgur_stop(h) /= FULGUR_OK) call fail(fulgur_last_error())

  ! An unseen start, then the surrogate alone beside the solver.
  call reset(12345_c_int64_t)
  do k = 1, 5
    call solver_step()
  end do
  surrogate = u
  do k = 1, rollout
    call solver_step()
    x(:, :, 1, 1) = surrogate
    if (fulgur_predict(h, x, y) /= FULGUR_OK) call fail(fulgur_last_error())
    surrogate = y(:, :, 1, 1)
    surrogate(1, :) = 0
    surrogate(ny, :) = 0
    call exchange_halos(surrogate)
  end do
  local(1) = sum(real(surrogate(:, 1:rows) - u(:, 1:rows), c_double)**2)
  local(2) = sum(real(u(:, 1:rows), c_double)**2)
  call MPI_Allreduce(local, total, 2, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) then
    print '(a, i0, a, i0, a, i0, a)', "insitu (Fortran): ", nranks, " rank(s), ", sim_steps, &
          " simulation steps while training ", steps, " steps"
    print '(a, i0, a, f6.4)', "insitu (Fortran): surrogate relative L2 error after ", rollout, &
          " steps on its own: ", sqrt(total(1) / total(2))
  end if
  call fulgur_destroy(h)
  call MPI_Finalize()

contains

  ! Hot spots at places drawn from `seed` (the same on every rank).
  subroutine reset(seed)
    integer(c_int64_t), intent(in) :: seed
    integer(c_int64_t) :: state
    integer :: spot, r, c, i, j
    real(c_float) :: heat
    state = seed
    u = 0
    do spot = 1, 6
      r = 4 + int(next_uniform(state) * (nx - 9))
      c = 4 + int(next_uniform(state) * (ny - 9))
      heat = 0.5 + 0.5 * next_uniform(state)
      do i = r - 3, r + 3
        do j = c - 3, c + 3
          if (i - first_row + 1 >= 1 .and. i - first_row + 1 <= rows) then
            u(j + 1, i - first_row + 1) = max(u(j + 1, i - first_row + 1), heat)
          end if
        end do
      end do
    end do
    call exchange_halos(u)
  end subroutine

  real(c_float) function next_uniform(state)
    integer(c_int64_t), intent(inout) :: state
    state = mod(state * 1103515245_c_int64_t + 12345_c_int64_t, 2147483648_c_int64_t)
    next_uniform = real(state, c_float) / 2147483648.0
  end function

  subroutine solver_step()
    real(c_float) :: next(ny, 0:rows + 1)
    next = u
    next(2:ny - 1, 1:rows) = u(2:ny - 1, 1:rows) + alpha * (u(2:ny - 1, 0:rows - 1) + u(2:ny - 1, 2:rows + 1) + &
                             u(1:ny - 2, 1:rows) + u(3:ny, 1:rows) - 4 * u(2:ny - 1, 1:rows))
    u = next
    call exchange_halos(u)
  end subroutine

  subroutine exchange_halos(field)
    real(c_float), intent(inout) :: field(ny, 0:rows + 1)
    call MPI_Sendrecv(field(:, 1), ny, MPI_REAL, up, 0, field(:, rows + 1), ny, MPI_REAL, down, 0, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    call MPI_Sendrecv(field(:, rows), ny, MPI_REAL, down, 1, field(:, 0), ny, MPI_REAL, up, 1, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    if (up == MPI_PROC_NULL) field(:, 0) = 0
    if (down == MPI_PROC_NULL) field(:, rows + 1) = 0
  end subroutine

  subroutine fail(message)
    character(len=*), intent(in) :: message
    write (*, '(a, i0, a, a)') "heat_insitu_fortran (rank ", rank, "): ", message
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine

end program heat_insitu_fortran
