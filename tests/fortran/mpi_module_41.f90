! gridmpi-test: ranks=1,2,4
! The `mpi` module's MPI 4.1 additions and MPI_SIZEOF: MPI_SIZEOF over
! intrinsic types and kinds, MPI_AINT_ADD/DIFF, the status accessors
! (MPI_STATUS_GET_SOURCE...), MPI_REQUEST_GET_STATUS_ALL/ANY/SOME,
! MPI_TYPE_GET_VALUE_INDEX, communicator buffers, MPI_BUFFER_AUTOMATIC and
! error class removal.
program mpi_module_41
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, errors, sz, i, v, idx, outcount, cls, code
  integer :: status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 2), reqs(2), indices(2), pairtype
  integer :: ibuf(4), jbuf(4)
  integer(kind=1) :: i1
  integer(kind=2) :: i2
  integer(kind=8) :: i8
  real :: r4
  double precision :: r8, dbl(3)
  complex :: c8
  complex(kind=8) :: c16
  logical :: l4, flag
  character(len=5) :: ch
  integer(kind=MPI_ADDRESS_KIND) :: a1, a2
  character, allocatable :: attached(:)
  errors = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)

  call MPI_Sizeof(i1, sz, ierr); call check(sz == 1, 'sizeof integer(1)')
  call MPI_Sizeof(i2, sz, ierr); call check(sz == 2, 'sizeof integer(2)')
  call MPI_Sizeof(rank, sz, ierr); call check(sz == 4, 'sizeof integer')
  call MPI_Sizeof(i8, sz, ierr); call check(sz == 8, 'sizeof integer(8)')
  call MPI_Sizeof(r4, sz, ierr); call check(sz == 4, 'sizeof real')
  call MPI_Sizeof(r8, sz, ierr); call check(sz == 8, 'sizeof double precision')
  call MPI_Sizeof(dbl, sz, ierr); call check(sz == 8 .and. ierr == MPI_SUCCESS, 'sizeof double array')
  call MPI_Sizeof(c8, sz, ierr); call check(sz == 8, 'sizeof complex')
  call MPI_Sizeof(c16, sz, ierr); call check(sz == 16, 'sizeof complex(8)')
  call MPI_Sizeof(l4, sz, ierr); call check(sz == 4, 'sizeof logical')
  call MPI_Sizeof(ch, sz, ierr); call check(sz == 1, 'sizeof character')

  call MPI_Get_address(dbl(1), a1, ierr)
  call MPI_Get_address(dbl(3), a2, ierr)
  call check(MPI_Aint_diff(a2, a1) == 16 .and. MPI_Aint_add(a1, 16_MPI_ADDRESS_KIND) == a2, 'aint add/diff')

  ! Status accessors (MPI 4.1).
  status = 0
  call MPI_Status_set_source(status, 3, ierr)
  call MPI_Status_set_tag(status, 44, ierr)
  call MPI_Status_set_error(status, MPI_ERR_TAG, ierr)
  call check(status(MPI_SOURCE) == 3 .and. status(MPI_TAG) == 44 .and. status(MPI_ERROR) == MPI_ERR_TAG, 'status setters')
  call MPI_Status_get_source(status, v, ierr); call check(v == 3, 'status_get_source')
  call MPI_Status_get_tag(status, v, ierr); call check(v == 44, 'status_get_tag')
  call MPI_Status_get_error(status, v, ierr); call check(v == MPI_ERR_TAG, 'status_get_error')

  ! Request status without freeing (MPI 4.1): indices are 1-based.
  ibuf = rank
  call MPI_Irecv(jbuf, 4, MPI_INTEGER, 0, 8, MPI_COMM_SELF, reqs(1), ierr)
  call MPI_Isend(ibuf, 4, MPI_INTEGER, 0, 8, MPI_COMM_SELF, reqs(2), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Request_get_status_all(2, reqs, flag, statuses, ierr)
  end do
  call check(statuses(MPI_TAG, 1) == 8 .and. reqs(1) /= MPI_REQUEST_NULL, 'request_get_status_all')
  call MPI_Request_get_status_any(2, reqs, idx, flag, status, ierr)
  call check(flag .and. (idx == 1 .or. idx == 2), 'request_get_status_any index is 1-based')
  call MPI_Request_get_status_some(2, reqs, outcount, indices, statuses, ierr)
  call check(outcount == 2 .and. minval(indices(1:2)) == 1 .and. maxval(indices(1:2)) == 2, 'request_get_status_some')
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  call check(all(jbuf == rank), 'data after get_status')

  ! Value-index pair types (MPI 4.1).
  call MPI_Type_get_value_index(MPI_DOUBLE_PRECISION, MPI_DOUBLE_PRECISION, pairtype, ierr)
  call check(ierr == MPI_SUCCESS .and. pairtype == MPI_2DOUBLE_PRECISION, 'type_get_value_index 2double')
  call MPI_Type_get_value_index(MPI_INTEGER, MPI_INTEGER, pairtype, ierr)
  call check(ierr == MPI_SUCCESS .and. pairtype == MPI_2INTEGER, 'type_get_value_index 2integer')

  ! A buffer attached to a communicator (MPI 4.1).
  allocate(attached(1000 + MPI_BSEND_OVERHEAD))
  call MPI_Comm_attach_buffer(MPI_COMM_WORLD, attached, size(attached), ierr)
  call check(ierr == MPI_SUCCESS, 'comm_attach_buffer')
  call MPI_Bsend(ibuf, 4, MPI_INTEGER, rank, 9, MPI_COMM_WORLD, ierr)
  call MPI_Recv(jbuf, 4, MPI_INTEGER, rank, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call MPI_Comm_flush_buffer(MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS .and. all(jbuf == rank), 'bsend through a communicator buffer')
  call MPI_Comm_detach_buffer(MPI_COMM_WORLD, attached, sz, ierr)
  call check(ierr == MPI_SUCCESS .and. sz == size(attached), 'comm_detach_buffer size')

  ! Automatic buffering (MPI 4.1): MPI_BUFFER_AUTOMATIC is a sentinel.
  call MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0, ierr)
  call check(ierr == MPI_SUCCESS, 'buffer_attach(MPI_BUFFER_AUTOMATIC)')
  ibuf = rank + 5
  call MPI_Bsend(ibuf, 4, MPI_INTEGER, rank, 10, MPI_COMM_WORLD, ierr)
  call MPI_Recv(jbuf, 4, MPI_INTEGER, rank, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS .and. all(jbuf == rank + 5), 'bsend through the automatic buffer')
  call MPI_Buffer_detach(attached, sz, ierr)
  call check(ierr == MPI_SUCCESS .and. sz == 0, 'buffer_detach of the automatic buffer')

  ! User error classes and codes can be removed again (MPI 4.1).
  call MPI_Add_error_class(cls, ierr)
  call MPI_Add_error_code(cls, code, ierr)
  call MPI_Add_error_string(code, 'a code of the test', ierr)
  call MPI_Remove_error_string(code, ierr)
  call MPI_Remove_error_code(code, ierr)
  call MPI_Remove_error_class(cls, ierr)
  call check(ierr == MPI_SUCCESS, 'remove error class')

  call MPI_Finalize(ierr)
  if (errors /= 0) stop 1
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      print *, 'rank', rank, 'FAILED: ', what
      errors = errors + 1
    end if
  end subroutine
end program
