! gridmpi-test: ranks=1,2,4 mpich-abi=yes
! MPI_INFO_GET and MPI_INFO_GET_STRING from Fortran (a user-reported bug:
! both returned wrong values). Values are blank-padded to LEN(value) and cut
! at VALUELEN / BUFLEN; BUFLEN comes back as the value's length (no NUL in
! Fortran); when the key is absent, or BUFLEN is 0, VALUE is left unchanged;
! leading and trailing blanks of keys and values are stripped (MPI_INFO_SET).
! MPICH 4.0 deviates from MPI 4.1 on one point: MPI_INFO_GET with a VALUELEN
! shorter than the value is an error there, where the standard truncates.
program info_get_values
  use mpi
  implicit none
  integer :: ierr, info, buflen, errors
  logical :: flag
  character(len=32) :: value
  character(len=4) :: short
  errors = 0
  call MPI_Init(ierr)
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, 'color', 'dark blue', ierr)
  call MPI_Info_set(info, ' padded ', '  x y  ', ierr)

  value = 'unchanged'
  call MPI_Info_get(info, 'color', MPI_MAX_INFO_VAL, value, flag, ierr)
  call check(flag .and. value == 'dark blue' .and. ierr == MPI_SUCCESS, 'get: full value')
  value = 'unchanged'
  call MPI_Info_get(info, 'color', 4, value, flag, ierr)
  call check(flag .and. value == 'dark', 'get: valuelen 4 cuts the value')
  value = 'unchanged'
  call MPI_Info_get(info, 'color', len(value), value, flag, ierr)
  call check(flag .and. value == 'dark blue', 'get: valuelen = LEN(value)')
  short = 'zzzz'
  call MPI_Info_get(info, 'color', MPI_MAX_INFO_VAL, short, flag, ierr)
  call check(flag .and. short == 'dark', 'get: value cut at LEN(value)')
  value = 'unchanged'
  call MPI_Info_get(info, 'nokey', MPI_MAX_INFO_VAL, value, flag, ierr)
  call check(.not. flag .and. value == 'unchanged', 'get: absent key leaves value')
  value = 'unchanged'
  call MPI_Info_get(info, 'padded', MPI_MAX_INFO_VAL, value, flag, ierr)
  call check(flag .and. value == 'x y', 'get: blanks around key and value stripped')

  value = 'unchanged'
  buflen = len(value)
  call MPI_Info_get_string(info, 'color', buflen, value, flag, ierr)
  call check(flag .and. value == 'dark blue' .and. buflen == 9, 'get_string: full value, buflen 9')
  value = 'unchanged'
  buflen = 4
  call MPI_Info_get_string(info, 'color', buflen, value, flag, ierr)
  call check(flag .and. value == 'dark' .and. buflen == 9, 'get_string: buflen 4 cuts, returns 9')
  short = 'zzzz'
  buflen = 100
  call MPI_Info_get_string(info, 'color', buflen, short, flag, ierr)
  call check(flag .and. short == 'dark' .and. buflen == 9, 'get_string: cut at LEN(value)')
  value = 'unchanged'
  buflen = 0
  call MPI_Info_get_string(info, 'color', buflen, value, flag, ierr)
  call check(flag .and. value == 'unchanged' .and. buflen == 9, 'get_string: buflen 0 asks the length only')
  value = 'unchanged'
  buflen = len(value)
  call MPI_Info_get_string(info, 'nokey', buflen, value, flag, ierr)
  call check(.not. flag .and. value == 'unchanged', 'get_string: absent key leaves value')

  call MPI_Info_free(info, ierr)
  call MPI_Finalize(ierr)
  if (errors /= 0) stop 1
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      print *, 'FAILED: ', what, ' value=[', trim(value), '] short=[', short, '] buflen=', buflen, ' flag=', flag
      errors = errors + 1
    end if
  end subroutine
end program
