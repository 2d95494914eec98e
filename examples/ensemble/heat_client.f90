! One member of the ensemble, in Fortran: the same heat rod as heat_rod.hpp,
! its samples streamed with the fulgur_client module.
!   heat_client_fortran RENDEZVOUS CLIENT_ID KAPPA AMPLITUDE
program heat_client_fortran
  use, intrinsic :: iso_c_binding
  use fulgur_client
  implicit none
  integer, parameter :: points = 64, steps = 800, every = 20
  real(c_double), parameter :: end_time = 0.05d0
  character(len=1024) :: rendezvous, arg
  integer :: id, step, i
  real(c_double) :: kappa, amplitude, pi, dx, dt
  real(c_double) :: u(points), next(points)
  real(c_float) :: inputs(3, 1), field(points, 1)
  integer(c_int64_t) :: sent, dropped
  type(fulgur_client_handle) :: client

  call get_command_argument(1, rendezvous)
  call get_command_argument(2, arg)
  read (arg, *) id
  call get_command_argument(3, arg)
  read (arg, *) kappa
  call get_command_argument(4, arg)
  read (arg, *) amplitude
  if (fulgur_client_connect(rendezvous, id, client) /= FULGUR_CLIENT_OK) then
    print *, "heat_client_fortran: ", fulgur_client_last_error()
    stop 1
  end if
  pi = acos(-1.0d0)
  dx = 1.0d0 / (points - 1)
  dt = end_time / steps
  do i = 1, points
    u(i) = amplitude * (sin(pi * (i - 1) * dx) + 0.5d0 * sin(3 * pi * (i - 1) * dx))
  end do
  next = 0
  do step = 0, steps
    if (mod(step, every) == 0) then
      inputs(:, 1) = [real(kappa, c_float), real(amplitude, c_float), real(step * dt / end_time, c_float)]
      field(:, 1) = real(u, c_float)
      if (fulgur_client_send(client, inputs, field) /= FULGUR_CLIENT_OK) then
        print *, "heat_client_fortran: ", fulgur_client_last_error()
        stop 1
      end if
    end if
    do i = 2, points - 1
      next(i) = u(i) + kappa * dt / (dx * dx) * (u(i - 1) - 2 * u(i) + u(i + 1))
    end do
    u = next
  end do
  if (fulgur_client_close(client, sent, dropped) /= FULGUR_CLIENT_OK) then
    print *, "heat_client_fortran: ", fulgur_client_last_error()
    stop 1
  end if
  call fulgur_client_destroy(client)
  print '(a, i0, a, i0, a, i0)', "heat_client_fortran ", id, ": sent ", sent, ", dropped ", dropped
end program
