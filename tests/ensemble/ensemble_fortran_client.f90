! A Fortran solver of the ensemble tests against the fulgur_client module:
! streams SAMPLES samples of y = sin(3 x0) * x1 (x uniform in [-1, 1]^2) in
! sends of 25, in float64, then closes and prints
! "fortran client ID: sent S dropped D queued Q". Its id is a 64-bit integer
! (fulgur_client_connect is generic over the kind). After close it checks
! the handle's edges: a send and a second close answer FULGUR_CLIENT_CLOSED
! and leave the outputs alone ("edges: ok"). Exit code 1 on a failure.
!   ensemble_fortran_client RENDEZVOUS CLIENT_ID SAMPLES
program ensemble_fortran_client
  use, intrinsic :: iso_c_binding
  use fulgur_client
  implicit none
  character(len=1024) :: rendezvous, arg
  integer(c_int64_t) :: id
  integer :: samples, done, n, i
  type(fulgur_client_handle) :: client
  real(c_double), allocatable :: x(:, :), y(:, :)
  real(c_double) :: r(2)
  integer(c_int64_t) :: sent, dropped, queued

  call get_command_argument(1, rendezvous)
  call get_command_argument(2, arg)
  read (arg, *) id
  call get_command_argument(3, arg)
  read (arg, *) samples
  if (fulgur_client_connect(rendezvous, id, client, connect_timeout_s=30.0_c_double) /= FULGUR_CLIENT_OK) then
    print *, "connect: ", fulgur_client_last_error()
    stop 1
  end if
  done = 0
  do while (done < samples)
    n = min(25, samples - done)
    allocate (x(2, n), y(1, n))
    do i = 1, n
      call random_number(r)
      x(:, i) = 2 * r - 1
      y(1, i) = sin(3 * x(1, i)) * x(2, i)
    end do
    if (fulgur_client_send(client, x, y) /= FULGUR_CLIENT_OK) then
      print *, "send: ", fulgur_client_last_error()
      stop 1
    end if
    deallocate (x, y)
    done = done + n
  end do
  if (fulgur_client_close(client, sent, dropped, queued) /= FULGUR_CLIENT_OK) then
    print *, "close: ", fulgur_client_last_error()
    stop 1
  end if
  print '(a, i0, a, i0, a, i0, a, i0)', "fortran client ", id, ": sent ", sent, " dropped ", dropped, " queued ", queued
  allocate (x(2, 1), y(1, 1))
  x = 0.5_c_double
  y = 0.5_c_double
  if (fulgur_client_send(client, x, y) /= FULGUR_CLIENT_CLOSED) then
    print *, "edges: a send after close did not answer FULGUR_CLIENT_CLOSED"
    stop 1
  end if
  sent = -7
  if (fulgur_client_close(client, sent, dropped, queued) /= FULGUR_CLIENT_CLOSED .or. sent /= -7) then
    print *, "edges: a second close did not answer FULGUR_CLIENT_CLOSED with the outputs untouched"
    stop 1
  end if
  call fulgur_client_destroy(client)
  call fulgur_client_destroy(client)
  print '(a)', "edges: ok"
end program
