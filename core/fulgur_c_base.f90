! What fulgur's Fortran modules (fulgur_online, fulgur_client) share over
! their C libraries (docs/c-abi.md): the handle, the C signatures both
! libraries' functions have, passing samples, destroying, and the strings.
! Compile it before them, with the same compiler.
module fulgur_c_base
  use, intrinsic :: iso_c_binding
  implicit none
  private

  ! A handle of one of the C libraries, as the program holds it: each module
  ! extends it with a type of its own, so that one library's handle cannot be
  ! passed to the other. Null until made, and again after destroy.
  type, public :: fulgur_c_handle
    type(c_ptr) :: ptr = c_null_ptr
  end type

  public :: fulgur_c_samples_call, fulgur_c_handle_call, fulgur_c_text_call, fulgur_c_handle_text_call, &
            fulgur_c_status_text_call, fulgur_c_destroy_call
  public :: fulgur_c_send_samples, fulgur_c_destroy, fulgur_c_shape, fulgur_c_string, fulgur_f_string

  ! The signatures the C functions of both libraries share: a module binds
  ! one with `procedure(fulgur_c_handle_call), bind(c, name="...") :: c_start`.
  abstract interface
    ! Samples in, as push and send take them: arrays and their C shapes.
    integer(c_int) function fulgur_c_samples_call(handle, x, xs, xn, y, ys, yn) bind(c)
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: handle, x, y
      integer(c_int64_t), intent(in) :: xs(*), ys(*)
      integer(c_int), value :: xn, yn
    end function
    integer(c_int) function fulgur_c_handle_call(handle) bind(c)
      import :: c_int, c_ptr
      type(c_ptr), value :: handle
    end function
    subroutine fulgur_c_destroy_call(handle) bind(c)
      import :: c_ptr
      type(c_ptr), value :: handle
    end subroutine
    ! A string the library keeps: the thread's last error, the version.
    type(c_ptr) function fulgur_c_text_call() bind(c)
      import :: c_ptr
    end function
    type(c_ptr) function fulgur_c_handle_text_call(handle) bind(c)
      import :: c_ptr
      type(c_ptr), value :: handle
    end function
    type(c_ptr) function fulgur_c_status_text_call(status) bind(c)
      import :: c_ptr, c_int
      integer(c_int), value :: status
    end function
  end interface

  interface
    integer(c_size_t) function c_strlen(s) bind(c, name="strlen")
      import :: c_size_t, c_ptr
      type(c_ptr), value :: s
    end function
  end interface

contains

  ! Calls `call` (a push or a send) with inputs `x` and targets `y` of any
  ! rank and kind, their last dimension the samples: the C API's first.
  integer(c_int) function fulgur_c_send_samples(call, handle, x, y) result(status)
    procedure(fulgur_c_samples_call) :: call
    class(fulgur_c_handle), intent(in) :: handle
    type(*), intent(in), target, contiguous :: x(..), y(..)
    status = call(handle%ptr, c_loc(x), fulgur_c_shape(shape(x)), int(rank(x), c_int), &
                  c_loc(y), fulgur_c_shape(shape(y)), int(rank(y), c_int))
  end function

  ! Calls `call` (the library's destroy) and nulls the handle; a null handle is harmless.
  subroutine fulgur_c_destroy(call, handle)
    procedure(fulgur_c_destroy_call) :: call
    class(fulgur_c_handle), intent(inout) :: handle
    call call(handle%ptr)
    handle%ptr = c_null_ptr
  end subroutine

  ! The C shape of a Fortran array: its extents, last first (the samples,
  ! Fortran's last dimension, are the C API's first).
  function fulgur_c_shape(extents) result(shape)
    integer, intent(in) :: extents(:)
    integer(c_int64_t) :: shape(size(extents))
    integer :: i
    do i = 1, size(extents)
      shape(i) = int(extents(size(extents) + 1 - i), c_int64_t)
    end do
  end function

  ! A Fortran string as C wants it: trailing blanks dropped, NUL-terminated.
  function fulgur_c_string(text) result(c_text)
    character(len=*), intent(in) :: text
    character(kind=c_char, len=:), allocatable :: c_text
    c_text = trim(text) // c_null_char
  end function

  ! A C string (a message, a version) as a Fortran string; "" for a null pointer.
  function fulgur_f_string(text) result(message)
    type(c_ptr), intent(in) :: text
    character(len=:), allocatable :: message
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    if (.not. c_associated(text)) then
      message = ""
      return
    end if
    n = int(c_strlen(text))
    call c_f_pointer(text, chars, [n])
    allocate(character(len=n) :: message)
    do i = 1, n
      message(i:i) = chars(i)
    end do
  end function

end module fulgur_c_base
