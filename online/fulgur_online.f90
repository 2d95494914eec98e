! fulgur's online trainer for Fortran programs, over the C API
! (fulgur_online.h) with iso_c_binding. Arrays are real(c_float) or
! real(c_double) (converted to the model's float32 and back), of any rank;
! their last dimension counts the samples (Fortran order), which is the C
! API's first: x(n_features, n_samples) or x(nx, ny, n_channels, n_samples).
! Every function returns a status (FULGUR_OK = 0); fulgur_last_error()
! (this thread's) and fulgur_errmsg(handle) (the handle's) say why a call
! failed, fulgur_strerror(status) names the status. Compile fulgur_c_base.f90
! (what it shares with fulgur_client: the handle, samples, strings) first.
module fulgur_online
  use, intrinsic :: iso_c_binding
  use fulgur_c_base
  implicit none
  private

  integer(c_int), parameter, public :: FULGUR_OK = 0, FULGUR_INVALID_ARGUMENT = 1, FULGUR_CONFIG_ERROR = 2, &
                                       FULGUR_TRAINING_ERROR = 3, FULGUR_CHECKPOINT_ERROR = 4, &
                                       FULGUR_INTERNAL_ERROR = 5, FULGUR_STOPPED = 6, FULGUR_INVALID_HANDLE = 7, &
                                       FULGUR_NOT_TRAINED = 8, FULGUR_MPI_ERROR = 9

  ! The trainer, as the program holds it: a type of its own, so a handle
  ! cannot be confused with another C pointer. Null until fulgur_create.
  type, public, extends(fulgur_c_handle) :: fulgur_handle
  end type

  public :: fulgur_create, fulgur_create_comm, fulgur_destroy, fulgur_train_step, fulgur_push, fulgur_start, fulgur_stop, &
            fulgur_predict, fulgur_save_checkpoint, fulgur_load_checkpoint, fulgur_global_step, fulgur_stop_signal, &
            fulgur_pause, fulgur_resume, &
            fulgur_last_error, fulgur_errmsg, fulgur_strerror, fulgur_version, fulgur_version_number

  ! float32 or float64 arrays, of any rank.
  interface fulgur_train_step
    module procedure train_step_f32, train_step_f64
  end interface
  interface fulgur_push
    module procedure push_f32, push_f64
  end interface
  interface fulgur_predict
    module procedure predict_f32, predict_f64
  end interface

  ! The C API's functions whose signatures fulgur_c_base names.
  procedure(fulgur_c_samples_call), bind(c, name="fulgur_online_push") :: c_push
  procedure(fulgur_c_samples_call), bind(c, name="fulgur_online_push_f64") :: c_push_f64
  procedure(fulgur_c_handle_call), bind(c, name="fulgur_online_start") :: c_start
  procedure(fulgur_c_handle_call), bind(c, name="fulgur_online_stop") :: c_stop
  procedure(fulgur_c_handle_call), bind(c, name="fulgur_online_pause") :: c_pause
  procedure(fulgur_c_handle_call), bind(c, name="fulgur_online_resume") :: c_resume
  procedure(fulgur_c_destroy_call), bind(c, name="fulgur_online_destroy") :: c_destroy
  procedure(fulgur_c_text_call), bind(c, name="fulgur_online_last_error") :: c_last_error
  procedure(fulgur_c_text_call), bind(c, name="fulgur_online_version") :: c_version
  procedure(fulgur_c_handle_text_call), bind(c, name="fulgur_online_errmsg") :: c_errmsg
  procedure(fulgur_c_status_text_call), bind(c, name="fulgur_online_strerror") :: c_strerror

  ! And those of its own.
  interface
    integer(c_int) function c_create(path, handle) bind(c, name="fulgur_online_create")
      import :: c_int, c_char, c_ptr
      character(kind=c_char), intent(in) :: path(*)
      type(c_ptr), intent(out) :: handle
    end function
    integer(c_int) function c_create_comm(path, comm, handle) bind(c, name="fulgur_online_create_comm")
      import :: c_int, c_char, c_ptr
      character(kind=c_char), intent(in) :: path(*)
      integer(c_int), value :: comm
      type(c_ptr), intent(out) :: handle
    end function
    ! train_step and train_step_f64: samples in, the loss out.
    integer(c_int) function c_train_step_call(handle, x, xs, xn, y, ys, yn, loss) bind(c)
      import :: c_int, c_ptr, c_int64_t, c_double
      type(c_ptr), value :: handle, x, y
      integer(c_int64_t), intent(in) :: xs(*), ys(*)
      integer(c_int), value :: xn, yn
      real(c_double), intent(out) :: loss
    end function
    ! predict and predict_f64: inputs in, `count` outputs out.
    integer(c_int) function c_predict_call(handle, x, xs, xn, out, count) bind(c)
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: handle, x, out
      integer(c_int64_t), intent(in) :: xs(*)
      integer(c_int), value :: xn
      integer(c_int64_t), value :: count
    end function
    integer(c_int) function c_checkpoint_call(handle, path) bind(c)
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: handle
      character(kind=c_char), intent(in) :: path(*)
    end function
    integer(c_int) function c_global_step(handle, step) bind(c, name="fulgur_online_global_step")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: handle
      integer(c_int64_t), intent(out) :: step
    end function
    integer(c_int) function c_stop_signal(handle, signal) bind(c, name="fulgur_online_stop_signal")
      import :: c_int, c_ptr
      type(c_ptr), value :: handle
      integer(c_int), intent(out) :: signal
    end function
    integer(c_int) function fulgur_version_number() bind(c, name="fulgur_online_version_number")
      import :: c_int
    end function
  end interface
  procedure(c_train_step_call), bind(c, name="fulgur_online_train_step") :: c_train_step
  procedure(c_train_step_call), bind(c, name="fulgur_online_train_step_f64") :: c_train_step_f64
  procedure(c_predict_call), bind(c, name="fulgur_online_predict") :: c_predict
  procedure(c_predict_call), bind(c, name="fulgur_online_predict_f64") :: c_predict_f64
  ! Checkpoints: a path in.
  procedure(c_checkpoint_call), bind(c, name="fulgur_online_save_checkpoint") :: c_save
  procedure(c_checkpoint_call), bind(c, name="fulgur_online_load_checkpoint") :: c_load

contains

  integer(c_int) function fulgur_create(config_path, handle) result(status)
    character(len=*), intent(in) :: config_path
    type(fulgur_handle), intent(out) :: handle
    status = c_create(fulgur_c_string(config_path), handle%ptr)
  end function

  ! Trained by the ranks of the program's communicator: with `use mpi_f08`
  ! pass comm%MPI_VAL, with `use mpi` the integer communicator itself.
  integer(c_int) function fulgur_create_comm(config_path, comm, handle) result(status)
    character(len=*), intent(in) :: config_path
    integer, intent(in) :: comm
    type(fulgur_handle), intent(out) :: handle
    status = c_create_comm(fulgur_c_string(config_path), int(comm, c_int), handle%ptr)
  end function

  ! Stops background training, frees the trainer and nulls the handle.
  subroutine fulgur_destroy(handle)
    type(fulgur_handle), intent(inout) :: handle
    call fulgur_c_destroy(c_destroy, handle)
  end subroutine

  ! Background mode: start training on its own thread (fulgur_push gives it
  ! samples), stop (waits; reports the error that stopped training).
  integer(c_int) function fulgur_start(handle) result(status)
    type(fulgur_handle), intent(in) :: handle
    status = c_start(handle%ptr)
  end function

  integer(c_int) function fulgur_stop(handle) result(status)
    type(fulgur_handle), intent(in) :: handle
    status = c_stop(handle%ptr)
  end function

  ! The arrays' calls, float32 then float64: train_step (inline mode: one
  ! optimizer step on a batch), push (background mode: samples for the
  ! training thread, copied before it returns), predict (the published model
  ! on x, into y: as many values as the prediction has).
  integer(c_int) function train_step_f32(handle, x, y, loss) result(status)
    type(fulgur_handle), intent(in) :: handle
    real(c_float), intent(in), target, contiguous :: x(..), y(..)
    real(c_double), intent(out) :: loss
    status = c_train_step(handle%ptr, c_loc(x), fulgur_c_shape(shape(x)), int(rank(x), c_int), &
                          c_loc(y), fulgur_c_shape(shape(y)), int(rank(y), c_int), loss)
  end function

  integer(c_int) function push_f32(handle, x, y) result(status)
    type(fulgur_handle), intent(in) :: handle
    real(c_float), intent(in), target, contiguous :: x(..), y(..)
    status = fulgur_c_send_samples(c_push, handle, x, y)
  end function

  integer(c_int) function predict_f32(handle, x, y) result(status)
    type(fulgur_handle), intent(in) :: handle
    real(c_float), intent(in), target, contiguous :: x(..)
    real(c_float), intent(inout), target, contiguous :: y(..)
    status = c_predict(handle%ptr, c_loc(x), fulgur_c_shape(shape(x)), int(rank(x), c_int), c_loc(y), &
                       int(size(y), c_int64_t))
  end function

  integer(c_int) function train_step_f64(handle, x, y, loss) result(status)
    type(fulgur_handle), intent(in) :: handle
    real(c_double), intent(in), target, contiguous :: x(..), y(..)
    real(c_double), intent(out) :: loss
    status = c_train_step_f64(handle%ptr, c_loc(x), fulgur_c_shape(shape(x)), int(rank(x), c_int), &
                              c_loc(y), fulgur_c_shape(shape(y)), int(rank(y), c_int), loss)
  end function

  integer(c_int) function push_f64(handle, x, y) result(status)
    type(fulgur_handle), intent(in) :: handle
    real(c_double), intent(in), target, contiguous :: x(..), y(..)
    status = fulgur_c_send_samples(c_push_f64, handle, x, y)
  end function

  integer(c_int) function predict_f64(handle, x, y) result(status)
    type(fulgur_handle), intent(in) :: handle
    real(c_double), intent(in), target, contiguous :: x(..)
    real(c_double), intent(inout), target, contiguous :: y(..)
    status = c_predict_f64(handle%ptr, c_loc(x), fulgur_c_shape(shape(x)), int(rank(x), c_int), c_loc(y), &
                           int(size(y), c_int64_t))
  end function

  integer(c_int) function fulgur_save_checkpoint(handle, path) result(status)
    type(fulgur_handle), intent(in) :: handle
    character(len=*), intent(in) :: path
    status = c_save(handle%ptr, fulgur_c_string(path))
  end function

  integer(c_int) function fulgur_load_checkpoint(handle, path) result(status)
    type(fulgur_handle), intent(in) :: handle
    character(len=*), intent(in) :: path
    status = c_load(handle%ptr, fulgur_c_string(path))
  end function

  integer(c_int) function fulgur_global_step(handle, step) result(status)
    type(fulgur_handle), intent(in) :: handle
    integer(c_int64_t), intent(out) :: step
    status = c_global_step(handle%ptr, step)
  end function

  ! Background training takes no step between pause and resume.
  integer(c_int) function fulgur_pause(handle) result(status)
    type(fulgur_handle), intent(in) :: handle
    status = c_pause(handle%ptr)
  end function

  integer(c_int) function fulgur_resume(handle) result(status)
    type(fulgur_handle), intent(in) :: handle
    status = c_resume(handle%ptr)
  end function

  ! The signal that stopped training (0: none): see FULGUR_STOPPED.
  integer(c_int) function fulgur_stop_signal(handle, signal) result(status)
    type(fulgur_handle), intent(in) :: handle
    integer(c_int), intent(out) :: signal
    status = c_stop_signal(handle%ptr, signal)
  end function

  ! The message of this thread's last call ("" after a success).
  function fulgur_last_error() result(message)
    character(len=:), allocatable :: message
    message = fulgur_f_string(c_last_error())
  end function

  ! The message of the last call on `handle` that failed, from any thread.
  function fulgur_errmsg(handle) result(message)
    type(fulgur_handle), intent(in) :: handle
    character(len=:), allocatable :: message
    message = fulgur_f_string(c_errmsg(handle%ptr))
  end function

  ! A status in words ("invalid handle").
  function fulgur_strerror(status) result(message)
    integer(c_int), intent(in) :: status
    character(len=:), allocatable :: message
    message = fulgur_f_string(c_strerror(status))
  end function

  ! The library's version, "MAJOR.MINOR.PATCH"; fulgur_version_number() is
  ! MAJOR * 1000000 + MINOR * 1000 + PATCH.
  function fulgur_version() result(version)
    character(len=:), allocatable :: version
    version = fulgur_f_string(c_version())
  end function

end module fulgur_online
