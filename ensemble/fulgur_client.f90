! fulgur's ensemble client for Fortran solvers, over the C API
! (fulgur_client.h, libfulgur_client) with iso_c_binding: samples stream to
! a fulgur training job (fulgur_serve) over the network. Arrays are
! real(c_float) or real(c_double), of any rank; their last dimension counts
! the samples (Fortran order), which is the C API's first:
! x(n_features, n_samples) or x(nx, ny, n_channels, n_samples). Every function returns a status
! (FULGUR_CLIENT_OK = 0, the C API's statuses); fulgur_client_last_error()
! says why a call failed (fulgur_client_errmsg(c) the handle's last failure,
! fulgur_client_strerror(status) the status in words), and a failed call
! leaves its outputs untouched. Compile fulgur_c_base.f90 (what it shares
! with fulgur_online: the handle, samples, strings) first.
!
!   type(fulgur_client_handle) :: c
!   status = fulgur_client_connect("run/ensemble.rendezvous", task_id, c)  ! task_id: integer, any of
!                                                                          ! kinds int32, int64 (c_int, c_int64_t)
!   status = fulgur_client_send(c, x, y)            ! every step
!   status = fulgur_client_close(c, sent, dropped)  ! drains, says goodbye; later calls: FULGUR_CLIENT_CLOSED
!   call fulgur_client_destroy(c)                   ! frees the handle
module fulgur_client
  use, intrinsic :: iso_c_binding
  use fulgur_c_base
  implicit none
  private

  integer(c_int), parameter, public :: FULGUR_CLIENT_OK = 0, FULGUR_CLIENT_INVALID_ARGUMENT = 1, &
                                       FULGUR_CLIENT_CONNECT_ERROR = 2, FULGUR_CLIENT_CLOSED = 3, &
                                       FULGUR_CLIENT_INTERNAL_ERROR = 4, FULGUR_CLIENT_UNACKNOWLEDGED = 5, &
                                       FULGUR_CLIENT_INVALID_HANDLE = 6, FULGUR_CLIENT_VERSION_ERROR = 7
  integer(c_int32_t), parameter, public :: FULGUR_CLIENT_BLOCK = 0, FULGUR_CLIENT_DROP_OLDEST = 1

  ! The connection, as the solver holds it. Null until fulgur_client_connect.
  type, public, extends(fulgur_c_handle) :: fulgur_client_handle
  end type

  ! fulgur_client_options of the C API (struct_size: set by c_default_options).
  type, bind(c) :: client_options
    integer(c_size_t) :: struct_size
    integer(c_int64_t) :: queue_capacity
    integer(c_int32_t) :: when_full
    real(c_double) :: connect_timeout_s, close_timeout_s
    integer(c_int64_t) :: ranks
  end type

  public :: fulgur_client_connect, fulgur_client_send, fulgur_client_close, fulgur_client_destroy, &
            fulgur_client_last_error, fulgur_client_errmsg, fulgur_client_strerror

  ! client_id of either integer kind: a default integer or a 64-bit one (a job array's task id, say).
  interface fulgur_client_connect
    module procedure connect_int32, connect_int64
  end interface

  ! float32 or float64 arrays, of any rank.
  interface fulgur_client_send
    module procedure send_f32, send_f64
  end interface

  ! The C API's functions whose signatures fulgur_c_base names: send,
  procedure(fulgur_c_samples_call), bind(c, name="fulgur_client_send") :: c_send
  procedure(fulgur_c_samples_call), bind(c, name="fulgur_client_send_f64") :: c_send_f64
  ! destroy and the messages; then those of its own.
  procedure(fulgur_c_destroy_call), bind(c, name="fulgur_client_destroy") :: c_destroy
  procedure(fulgur_c_text_call), bind(c, name="fulgur_client_last_error") :: c_last_error
  procedure(fulgur_c_handle_text_call), bind(c, name="fulgur_client_errmsg") :: c_errmsg
  procedure(fulgur_c_status_text_call), bind(c, name="fulgur_client_strerror") :: c_strerror
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
    integer(c_int) function c_close(handle, sent, dropped, queued) bind(c, name="fulgur_client_close")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: handle
      integer(c_int64_t), intent(inout) :: sent, dropped, queued
    end function
  end interface

contains

  ! Connects to the training job named by the rendezvous file (waiting for
  ! it). client_id: a 32- or 64-bit integer (fulgur_client_connect is generic
  ! over both; convert another kind with int(id, c_int64_t)). Optional:
  ! queue_capacity (messages), when_full (FULGUR_CLIENT_BLOCK or
  ! FULGUR_CLIENT_DROP_OLDEST), connect_timeout_s, close_timeout_s, ranks
  ! (the server ranks it sends to; 0: all).
  integer(c_int) function connect_int64(rendezvous, client_id, handle, queue_capacity, when_full, &
                                        connect_timeout_s, close_timeout_s, ranks) result(status)
    character(len=*), intent(in) :: rendezvous
    integer(c_int64_t), intent(in) :: client_id
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
    status = c_connect(fulgur_c_string(rendezvous), client_id, options, handle%ptr)
  end function

  integer(c_int) function connect_int32(rendezvous, client_id, handle, queue_capacity, when_full, &
                                        connect_timeout_s, close_timeout_s, ranks) result(status)
    character(len=*), intent(in) :: rendezvous
    integer(c_int32_t), intent(in) :: client_id
    type(fulgur_client_handle), intent(out) :: handle
    integer, intent(in), optional :: queue_capacity
    integer(c_int32_t), intent(in), optional :: when_full
    real(c_double), intent(in), optional :: connect_timeout_s, close_timeout_s
    integer, intent(in), optional :: ranks
    status = connect_int64(rendezvous, int(client_id, c_int64_t), handle, queue_capacity, when_full, &
                           connect_timeout_s, close_timeout_s, ranks)
  end function

  ! Queues the samples, copied before it returns.
  integer(c_int) function send_f32(handle, x, y) result(status)
    type(fulgur_client_handle), intent(in) :: handle
    real(c_float), intent(in), target, contiguous :: x(..), y(..)
    status = fulgur_c_send_samples(c_send, handle, x, y)
  end function

  ! The same from doubles (fulgur_client_send_f64).
  integer(c_int) function send_f64(handle, x, y) result(status)
    type(fulgur_client_handle), intent(in) :: handle
    real(c_double), intent(in), target, contiguous :: x(..), y(..)
    status = fulgur_c_send_samples(c_send_f64, handle, x, y)
  end function

  ! Sends what is queued, tells the server what it was sent, disconnects.
  ! The handle stays valid until fulgur_client_destroy: later calls answer
  ! FULGUR_CLIENT_CLOSED. The counts (optional): samples sent, dropped from
  ! a full queue, left queued; set only when the handle was open (also with
  ! FULGUR_CLIENT_UNACKNOWLEDGED: close gave up before every acknowledgement).
  integer(c_int) function fulgur_client_close(handle, sent, dropped, queued) result(status)
    type(fulgur_client_handle), intent(in) :: handle
    integer(c_int64_t), intent(inout), optional :: sent, dropped, queued
    integer(c_int64_t) :: s, d, q
    s = -1  ! a count is never negative: -1 after the call means the C API left it alone
    d = -1
    q = -1
    status = c_close(handle%ptr, s, d, q)
    if (present(sent) .and. s >= 0) sent = s
    if (present(dropped) .and. d >= 0) dropped = d
    if (present(queued) .and. q >= 0) queued = q
  end function

  ! Frees the handle (closing it first if it is open) and nulls it; a null
  ! handle is harmless.
  subroutine fulgur_client_destroy(handle)
    type(fulgur_client_handle), intent(inout) :: handle
    call fulgur_c_destroy(c_destroy, handle)
  end subroutine

  ! What a FULGUR_CLIENT_* status means, in a few words ("closed").
  function fulgur_client_strerror(status) result(message)
    integer(c_int), intent(in) :: status
    character(len=:), allocatable :: message
    message = fulgur_f_string(c_strerror(status))
  end function

  ! The message of the handle's last failed call, whichever thread made it.
  function fulgur_client_errmsg(handle) result(message)
    type(fulgur_client_handle), intent(in) :: handle
    character(len=:), allocatable :: message
    message = fulgur_f_string(c_errmsg(handle%ptr))
  end function

  ! The calling thread's last message ("" after a success).
  function fulgur_client_last_error() result(message)
    character(len=:), allocatable :: message
    message = fulgur_f_string(c_last_error())
  end function

end module fulgur_client
