! fulgur's ensemble client for Fortran solvers, over the C API
! (fulgur_client.h, libfulgur_client) with iso_c_binding: samples stream to
! a fulgur training job (fulgur_serve) over the network. Arrays are
! real(c_float) or real(c_double); their last dimension counts the samples
! (Fortran order), which is the C API's first: x(n_features, n_samples) or
! x(nx, ny, n_channels, n_samples). Every function returns a status
! (FULGUR_CLIENT_OK = 0); fulgur_client_last_error() says why a call failed.
!
!   type(fulgur_client_handle) :: c
!   status = fulgur_client_connect("run/ensemble.rendezvous", task_id, c)
!   status = fulgur_client_send(c, x, y)            ! every step
!   status = fulgur_client_close(c, sent, dropped)  ! frees the handle
module fulgur_client
  use, intrinsic :: iso_c_binding
  implicit none
  private

  integer(c_int), parameter, public :: FULGUR_CLIENT_OK = 0, FULGUR_CLIENT_INVALID_ARGUMENT = 1, &
                                       FULGUR_CLIENT_CONNECT_ERROR = 2, FULGUR_CLIENT_CLOSED = 3, &
                                       FULGUR_CLIENT_INTERNAL_ERROR = 4
  integer(c_int32_t), parameter, public :: FULGUR_CLIENT_BLOCK = 0, FULGUR_CLIENT_DROP_OLDEST = 1

  ! The connection, as the solver holds it. Null until fulgur_client_connect.
  type, public :: fulgur_client_handle
    type(c_ptr) :: ptr = c_null_ptr
  end type

  ! fulgur_client_options of the C API.
  type, bind(c) :: client_options
    integer(c_int64_t) :: queue_capacity
    integer(c_int32_t) :: when_full
    real(c_double) :: connect_timeout_s, close_timeout_s
    integer(c_int64_t) :: ranks
  end type

  public :: fulgur_client_connect, fulgur_client_send, fulgur_client_close, fulgur_client_last_error

  interface fulgur_client_send
    module procedure send_2d, send_4d, send_2d_f64, send_4d_f64
  end interface

  interface
    type(client_options) function c_default_options() bind(c, name="fulgur_client_default_options")
      import :: client_options
    end function
    integer(c_int) function c_connect(path, id, options, handle) bind(c, name="fulgur_client_connect")
      import :: c_int, c_char, c_int64_t, c_ptr, client_options
      character(kind=c_char), intent(in) :: path(*)
      integer(c_int64_t), value :: id
      type(client_options), intent(in) :: options
      type(c_ptr), intent(out) :: handle
    end function
    integer(c_int) function c_send(handle, x, xs, xn, y, ys, yn) bind(c, name="fulgur_client_send")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: handle, x, y
      integer(c_int64_t), intent(in) :: xs(*), ys(*)
      integer(c_int), value :: xn, yn
    end function
    integer(c_int) function c_send_f64(handle, x, xs, xn, y, ys, yn) bind(c, name="fulgur_client_send_f64")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: handle, x, y
      integer(c_int64_t), intent(in) :: xs(*), ys(*)
      integer(c_int), value :: xn, yn
    end function
    integer(c_int) function c_close(handle, sent, dropped, queued) bind(c, name="fulgur_client_close")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: handle
      integer(c_int64_t), intent(out) :: sent, dropped, queued
    end function
    type(c_ptr) function c_last_error() bind(c, name="fulgur_client_last_error")
      import :: c_ptr
    end function
    integer(c_size_t) function c_strlen(s) bind(c, name="strlen")
      import :: c_size_t, c_ptr
      type(c_ptr), value :: s
    end function
  end interface

contains

  ! The C shape of a Fortran array: its extents, last first.
  function c_shape(extents) result(shape)
    integer, intent(in) :: extents(:)
    integer(c_int64_t) :: shape(size(extents))
    integer :: i
    do i = 1, size(extents)
      shape(i) = int(extents(size(extents) + 1 - i), c_int64_t)
    end do
  end function

  ! Connects to the training job named by the rendezvous file (waiting for
  ! it). Optional: queue_capacity (messages), when_full (FULGUR_CLIENT_BLOCK
  ! or FULGUR_CLIENT_DROP_OLDEST), connect_timeout_s, close_timeout_s, ranks
  ! (the server ranks it sends to; 0: all).
  integer(c_int) function fulgur_client_connect(rendezvous, client_id, handle, queue_capacity, when_full, &
                                                connect_timeout_s, close_timeout_s, ranks) result(status)
    character(len=*), intent(in) :: rendezvous
    integer, intent(in) :: client_id
    type(fulgur_client_handle), intent(out) :: handle
    integer, intent(in), optional :: queue_capacity
    integer(c_int32_t), intent(in), optional :: when_full
    real(c_double), intent(in), optional :: connect_timeout_s, close_timeout_s
    integer, intent(in), optional :: ranks
    type(client_options) :: options
    options = c_default_options()
    if (present(queue_capacity)) options%queue_capacity = int(queue_capacity, c_int64_t)
    if (present(when_full)) options%when_full = when_full
    if (present(connect_timeout_s)) options%connect_timeout_s = connect_timeout_s
    if (present(close_timeout_s)) options%close_timeout_s = close_timeout_s
    if (present(ranks)) options%ranks = int(ranks, c_int64_t)
    status = c_connect(trim(rendezvous) // c_null_char, int(client_id, c_int64_t), options, handle%ptr)
  end function

  integer(c_int) function send_2d(handle, x, y) result(status)
    type(fulgur_client_handle), intent(in) :: handle
    real(c_float), intent(in), target, contiguous :: x(:, :), y(:, :)
    status = c_send(handle%ptr, c_loc(x), c_shape(shape(x)), 2, c_loc(y), c_shape(shape(y)), 2)
  end function
  integer(c_int) function send_4d(handle, x, y) result(status)
    type(fulgur_client_handle), intent(in) :: handle
    real(c_float), intent(in), target, contiguous :: x(:, :, :, :), y(:, :, :, :)
    status = c_send(handle%ptr, c_loc(x), c_shape(shape(x)), 4, c_loc(y), c_shape(shape(y)), 4)
  end function
  integer(c_int) function send_2d_f64(handle, x, y) result(status)
    type(fulgur_client_handle), intent(in) :: handle
    real(c_double), intent(in), target, contiguous :: x(:, :), y(:, :)
    status = c_send_f64(handle%ptr, c_loc(x), c_shape(shape(x)), 2, c_loc(y), c_shape(shape(y)), 2)
  end function
  integer(c_int) function send_4d_f64(handle, x, y) result(status)
    type(fulgur_client_handle), intent(in) :: handle
    real(c_double), intent(in), target, contiguous :: x(:, :, :, :), y(:, :, :, :)
    status = c_send_f64(handle%ptr, c_loc(x), c_shape(shape(x)), 4, c_loc(y), c_shape(shape(y)), 4)
  end function

  ! Sends what is queued, tells the server what it was sent, frees the
  ! handle. The counts (optional): samples sent, dropped from a full queue,
  ! left queued.
  integer(c_int) function fulgur_client_close(handle, sent, dropped, queued) result(status)
    type(fulgur_client_handle), intent(inout) :: handle
    integer(c_int64_t), intent(out), optional :: sent, dropped, queued
    integer(c_int64_t) :: s, d, q
    status = c_close(handle%ptr, s, d, q)
    handle%ptr = c_null_ptr
    if (present(sent)) sent = s
    if (present(dropped)) dropped = d
    if (present(queued)) queued = q
  end function

  ! The message of the last failed call, as a Fortran string.
  function fulgur_client_last_error() result(message)
    character(len=:), allocatable :: message
    type(c_ptr) :: text
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    text = c_last_error()
    n = int(c_strlen(text))
    call c_f_pointer(text, chars, [n])
    allocate(character(len=n) :: message)
    do i = 1, n
      message(i:i) = chars(i)
    end do
  end function

end module fulgur_client
