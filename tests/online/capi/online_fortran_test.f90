! The Fortran module from a Fortran program: create from YAML, train inline,
! predict, a bad key, background mode. Writes only under a fresh temporary
! folder (its name from the command line). Stops with code 1 on a failure.
program online_fortran_test
  use, intrinsic :: iso_c_binding
  use fulgur_online
  implicit none

  type(fulgur_handle) :: h
  character(len=512) :: dir
  real(c_float) :: x(2, 32), y(1, 32), px(2, 64), py(1, 64), out(1, 64)
  real(c_double) :: loss, first, xd(2, 32), yd(1, 32), pxd(2, 64), outd(1, 64)
  integer(c_int64_t) :: steps
  integer :: step, failures, unit
  real :: before, after

  failures = 0
  if (command_argument_count() /= 1) stop 2
  call get_command_argument(1, dir)

  open(newunit=unit, file=trim(dir) // "/bad.yaml", status="replace")
  write(unit, '(a)') "optimizer: {type: adam, learning_rate: 0.01}"
  close(unit)
  call check(fulgur_create(trim(dir) // "/bad.yaml", h) == FULGUR_CONFIG_ERROR, "unknown key refused")
  call check(index(fulgur_last_error(), "optimizer.learning_rate: unknown key") > 0, "the message names the key")

  open(newunit=unit, file=trim(dir) // "/config.yaml", status="replace")
  write(unit, '(a)') "model: {type: mlp, layers: [2, 32, 1]}"
  write(unit, '(a)') "optimizer: {type: adam, lr: 0.01}"
  write(unit, '(a)') "online: {publish_every_n_steps: 5, num_threads: 1, max_steps: 350}"
  write(unit, '(a)') "stream: {capacity: 256, when_full: replay, batch_size: 32}"
  write(unit, '(a)') "trainer: {accelerator: cpu}"
  close(unit)
  call check(fulgur_create(trim(dir) // "/config.yaml", h) == FULGUR_OK, "create")

  call random_seed(put=[(42, step = 1, 64)])
  call make_batch(px, py)
  call check(fulgur_predict(h, px, out) == FULGUR_NOT_TRAINED, "predict before training says so")
  before = sum((out - py)**2) / 64

  do step = 1, 300
    call make_batch(x, y)
    call check(fulgur_train_step(h, x, y, loss) == FULGUR_OK, "train_step")
    if (step == 1) first = loss
  end do
  call check(fulgur_predict(h, px, out) == FULGUR_OK, "predict after training")
  after = sum((out - py)**2) / 64
  print '(a, f8.5, a, f8.5)', "fortran inline: probe mse ", before, " -> ", after
  call check(after < before / 10, "inline training lowers the error tenfold")

  ! Doubles: converted to the model's float32 on the way in and back out.
  pxd = real(px, c_double)
  call check(fulgur_predict(h, pxd, outd) == FULGUR_OK, "predict from doubles")
  call check(maxval(abs(outd - real(out, c_double))) == 0, "doubles predict what floats predict")
  xd = real(x, c_double)
  yd = real(y, c_double)
  call check(fulgur_train_step(h, xd, yd, loss) == FULGUR_OK, "train_step from doubles")
  call check(fulgur_global_step(h, steps) == FULGUR_OK .and. steps == 301, "a step from doubles counts")

  ! A sample shaped unlike the first push's.
  call check(fulgur_start(h) == FULGUR_OK, "start")
  call check(fulgur_push(h, x, y) == FULGUR_OK, "push")
  call check(fulgur_push(h, xd, yd) == FULGUR_OK, "push doubles")
  call check(fulgur_push(h, px(:, 1:32), py(:, 1:16)) == FULGUR_INVALID_ARGUMENT, "push with 16 targets for 32 inputs")
  ! The C ABI convention's calls (docs/c-abi.md): the handle keeps its last failure, statuses in words.
  call check(index(fulgur_errmsg(h), "fulgur_online_push: ") > 0, "the handle's message names the failed call")
  call check(fulgur_strerror(FULGUR_INVALID_ARGUMENT) == "invalid argument", "strerror names the status")
  call check(fulgur_version_number() >= 1000 .and. len(fulgur_version()) >= 5, "the library's version")
  steps = 0
  do while (steps < 350)
    call make_batch(x, y)
    if (fulgur_push(h, x, y) /= FULGUR_OK) exit
    if (fulgur_global_step(h, steps) /= FULGUR_OK) exit
  end do
  call check(fulgur_stop(h) == FULGUR_OK, "stop")
  call check(fulgur_global_step(h, steps) == FULGUR_OK .and. steps == 350, "background reached max_steps")
  call fulgur_destroy(h)
  call check(fulgur_global_step(h, steps) == FULGUR_INVALID_ARGUMENT, "destroy nulls the handle: refused")

  if (failures /= 0) then
    print '(a, i0, a)', "FAIL: ", failures, " failure(s)"
    stop 1
  end if
  print '(a)', "PASS"

contains

  subroutine make_batch(x, y)
    real(c_float), intent(out) :: x(:, :), y(:, :)
    call random_number(x)
    x = 2 * x - 1
    y(1, :) = x(1, :) * x(2, :) + sin(x(1, :))
  end subroutine

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      print '(a, a, a, a)', "check failed: ", what, "; last error: ", fulgur_last_error()
      failures = failures + 1
    end if
  end subroutine

end program online_fortran_test
