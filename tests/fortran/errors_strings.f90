! gridmpi-test: ranks=2 mpich-abi=yes
! Error handling and strings: MPI_ERRORS_RETURN codes and classes, error
! strings (blank-padded, truncated to LEN), user error classes, a Fortran
! error handler, object names, processor name, library version, info
! objects; status helpers and generalized requests with Fortran callbacks.
program errors_strings
  use mpi
  implicit none
  integer :: ierr, rank, nerr, n, cls, code, eh, info, nkeys, req, vlen
  integer :: status(MPI_STATUS_SIZE)
  character(len=MPI_MAX_ERROR_STRING) :: msg
  character(len=10) :: short
  character(len=MPI_MAX_OBJECT_NAME) :: cname
  character(len=MPI_MAX_PROCESSOR_NAME) :: pname
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: version
  character(len=MPI_MAX_INFO_KEY) :: key
  character(len=MPI_MAX_INFO_VAL) :: val
  character(len=4) :: val4
  logical :: flag
  integer :: handler_calls, handler_code
  common /handler_state/ handler_calls, handler_code
  external :: my_handler, query_fn, free_fn, cancel_fn
  integer :: greq_log(3)
  common /greq_state/ greq_log

  nerr = 0
  handler_calls = 0
  greq_log = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)

  ! Errors returned as codes.
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  call MPI_Send(n, 1, MPI_INTEGER, 99, 0, MPI_COMM_WORLD, ierr)
  call check(ierr /= MPI_SUCCESS, 'Send to rank 99 returns an error')
  call MPI_Error_class(ierr, cls, code)
  call check(cls == MPI_ERR_RANK, 'its class is MPI_ERR_RANK')
  call MPI_Error_string(ierr, msg, n, code)
  call check(code == MPI_SUCCESS .and. n > 0 .and. n <= MPI_MAX_ERROR_STRING, 'Error_string length')
  call check(len_trim(msg) == n, 'Error_string is blank-padded after resultlen')
  call MPI_Error_string(MPI_ERR_TAG, short, n, code)
  call check(n > 10 .and. short /= ' ', 'Error_string truncated to LEN')
  call MPI_Error_string(MPI_SUCCESS, msg, n, code)
  call check(n > 0, 'Error_string of MPI_SUCCESS')

  ! User error classes, codes and strings.
  call MPI_Add_error_class(cls, ierr)
  call MPI_Add_error_code(cls, code, ierr)
  call MPI_Add_error_string(code, 'my own error   ', ierr)
  call MPI_Error_string(code, msg, n, ierr)
  call check(msg == 'my own error' .and. n == 12, 'Add_error_string round trip: '//trim(msg))
  call MPI_Error_class(code, n, ierr)
  call check(n == cls, 'class of a user code')

  ! A Fortran error handler.
  call MPI_Comm_create_errhandler(my_handler, eh, ierr)
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh, ierr)
  call MPI_Comm_call_errhandler(MPI_COMM_WORLD, code, ierr)
  call check(handler_calls == 1 .and. handler_code == code, 'Fortran error handler called with the code')
  call MPI_Send(n, 1, MPI_INTEGER, 99, 0, MPI_COMM_WORLD, ierr)
  call check(handler_calls == 2, 'Fortran error handler called for an invalid rank')
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)
  call MPI_Errhandler_free(eh, ierr)
  call check(eh == MPI_ERRHANDLER_NULL, 'Errhandler_free')

  ! Names.
  call MPI_Comm_get_name(MPI_COMM_WORLD, cname, n, ierr)
  call check(cname == 'MPI_COMM_WORLD' .and. n == 14, 'name of MPI_COMM_WORLD: '//trim(cname))
  call MPI_Comm_set_name(MPI_COMM_SELF, 'myself', ierr)
  call MPI_Comm_get_name(MPI_COMM_SELF, cname, n, ierr)
  call check(cname == 'myself' .and. n == 6, 'Comm_set_name round trip')
  call MPI_Get_processor_name(pname, n, ierr)
  call check(n > 0 .and. len_trim(pname) == n, 'Get_processor_name')
  call MPI_Get_library_version(version, n, ierr)
  call check(n > 0 .and. index(version, 'GridMPI') + index(version, 'MPICH') > 0, 'Get_library_version: '//version(1:40))

  ! Info objects.
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, 'color  ', 'blue sky  ', ierr)
  call MPI_Info_set(info, 'size', '42', ierr)
  call MPI_Info_get_nkeys(info, nkeys, ierr)
  call check(nkeys == 2, 'Info_get_nkeys')
  call MPI_Info_get_nthkey(info, 0, key, ierr)
  call check(key == 'color', 'Info_get_nthkey: '//trim(key))
  call MPI_Info_get(info, 'color', MPI_MAX_INFO_VAL, val, flag, ierr)
  call check(flag .and. val == 'blue sky', 'Info_get: '//trim(val))
  call MPI_Info_get(info, 'color', 4, val4, flag, ierr)
  call check(flag .and. val4 == 'blue', 'Info_get truncated to valuelen')
  call MPI_Info_get_valuelen(info, 'color', vlen, flag, ierr)
  call check(flag .and. vlen == 8, 'Info_get_valuelen')
  call MPI_Info_get(info, 'missing', MPI_MAX_INFO_VAL, val, flag, ierr)
  call check(.not. flag, 'Info_get of a missing key')
  vlen = len(val)
  call MPI_Info_get_string(info, 'size', vlen, val, flag, ierr)
  call check(flag .and. val == '42' .and. vlen == 2, 'Info_get_string')
  call MPI_Info_delete(info, 'size', ierr)
  call MPI_Info_get_nkeys(info, nkeys, ierr)
  call check(nkeys == 1, 'Info_delete')
  call MPI_Info_free(info, ierr)
  call check(info == MPI_INFO_NULL, 'Info_free')

  ! Status helpers.
  call MPI_Status_set_elements(status, MPI_INTEGER, 7, ierr)
  call MPI_Get_count(status, MPI_INTEGER, n, ierr)
  call check(n == 7, 'Status_set_elements / Get_count')
  call MPI_Status_set_cancelled(status, .true., ierr)
  call MPI_Test_cancelled(status, flag, ierr)
  call check(flag, 'Status_set_cancelled(.true.)')
  call MPI_Status_set_cancelled(status, .false., ierr)
  call MPI_Test_cancelled(status, flag, ierr)
  call check(.not. flag, 'Status_set_cancelled(.false.)')

  ! A generalized request with Fortran callbacks.
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, 1234_MPI_ADDRESS_KIND, req, ierr)
  call MPI_Test(req, flag, status, ierr)
  call check(.not. flag, 'generalized request pending')
  call MPI_Grequest_complete(req, ierr)
  call MPI_Wait(req, status, ierr)
  call check(greq_log(1) == 1234 .and. status(MPI_TAG) == 77, 'Grequest query_fn got extra_state and set the status')
  call check(greq_log(2) == 1234, 'Grequest free_fn called')

  call MPI_Finalize(ierr)
  if (nerr /= 0) stop 1

contains

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (.not. cond) then
      nerr = nerr + 1
      print '(a,i0,2a)', 'rank ', rank, ' FAILED: ', what
    end if
  end subroutine
end program

subroutine my_handler(comm, code)
  implicit none
  integer :: comm, code
  integer :: handler_calls, handler_code
  common /handler_state/ handler_calls, handler_code
  handler_calls = handler_calls + 1
  handler_code = code
end subroutine

subroutine query_fn(extra_state, status, ierror)
  use mpi
  implicit none
  integer(kind=MPI_ADDRESS_KIND) :: extra_state
  integer :: status(MPI_STATUS_SIZE), ierror
  integer :: greq_log(3)
  common /greq_state/ greq_log
  greq_log(1) = int(extra_state)
  call MPI_Status_set_elements(status, MPI_BYTE, 0, ierror)
  call MPI_Status_set_cancelled(status, .false., ierror)
  status(MPI_SOURCE) = MPI_UNDEFINED
  status(MPI_TAG) = 77
  ierror = MPI_SUCCESS
end subroutine

subroutine free_fn(extra_state, ierror)
  use mpi
  implicit none
  integer(kind=MPI_ADDRESS_KIND) :: extra_state
  integer :: ierror
  integer :: greq_log(3)
  common /greq_state/ greq_log
  greq_log(2) = int(extra_state)
  ierror = MPI_SUCCESS
end subroutine

subroutine cancel_fn(extra_state, complete, ierror)
  use mpi
  implicit none
  integer(kind=MPI_ADDRESS_KIND) :: extra_state
  logical :: complete
  integer :: ierror
  integer :: greq_log(3)
  common /greq_state/ greq_log
  greq_log(3) = greq_log(3) + 1
  ierror = MPI_SUCCESS
end subroutine
