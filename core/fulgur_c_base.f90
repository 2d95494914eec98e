! What fulgur's Fortran modules (fulgur_online, fulgur_client) share over
! their C libraries (docs/c-abi.md): the handle, the C shape of an array and
! the strings. Compile it before them, with the same compiler.
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

  public :: fulgur_c_shape, fulgur_c_string, fulgur_f_string

  interface
    integer(c_size_t) function c_strlen(s) bind(c, name="strlen")
      import :: c_size_t, c_ptr
      type(c_ptr), value :: s
    end function
  end interface

contains

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
