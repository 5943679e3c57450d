! gridmpi-test: ranks=1,2,4 timeout=90
! The mpi_f08 module: handle types and their comparison, p2p with statuses,
! collectives with a user-defined operation, derived datatypes,
! communicator split/dup with attributes and a copy callback, nonblocking
! with MPI_Waitall on TYPE(MPI_Request) arrays, the large-count overloads,
! error handlers returning codes (ierror present and absent) and a user
! error handler, MPI_SIZEOF, MPI_Info_get_string, status conversions,
! non-contiguous buffers (blocking calls copy them, a nonblocking send
! takes one through a datatype), PMPI names. Built with MPICH 4.0.2's mpi_f08 it fails
! 'allreduce on sections' only: MPICH passes a section as a derived
! datatype, which its MPI_SUM then rejects (the standard allows sections
! wherever MPI_SUBARRAYS_SUPPORTED is .TRUE.).
module f08_callbacks
  use mpi_f08
  use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
  implicit none
  integer :: copies = 0, deletes = 0, handler_calls = 0, handler_code = 0
contains
  ! Element-wise (a, b) -> (a + b, max): a non-predefined combination.
  subroutine pair_op(invec, inoutvec, len, datatype)
    type(c_ptr), value :: invec, inoutvec
    integer :: len
    type(MPI_Datatype) :: datatype
    integer, pointer :: a(:), b(:)
    integer :: i
    call c_f_pointer(invec, a, [2 * len])
    call c_f_pointer(inoutvec, b, [2 * len])
    if (datatype /= MPI_2INTEGER) b(1) = -999
    do i = 1, 2 * len, 2
      b(i) = a(i) + b(i)
      b(i + 1) = max(a(i + 1), b(i + 1))
    end do
  end subroutine

  subroutine copy_plus_one(oldcomm, comm_keyval, extra_state, attribute_val_in, attribute_val_out, flag, ierror)
    type(MPI_Comm) :: oldcomm
    integer :: comm_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
    logical :: flag
    copies = copies + 1
    attribute_val_out = attribute_val_in + 1 + extra_state
    flag = .true.
    ierror = MPI_SUCCESS
  end subroutine

  subroutine count_delete(comm, comm_keyval, attribute_val, extra_state, ierror)
    type(MPI_Comm) :: comm
    integer :: comm_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
    deletes = deletes + 1
    ierror = MPI_SUCCESS
  end subroutine

  subroutine record_error(comm, error_code)
    type(MPI_Comm) :: comm
    integer :: error_code
    handler_calls = handler_calls + 1
    handler_code = error_code
  end subroutine
end module

program f08_features
  use mpi_f08
  use f08_callbacks
  implicit none
  integer :: rank, nprocs, ierr, errors, i, n, left, right, keyval, sz, cls, buflen
  integer :: sendbuf(10), recvbuf(10), matrix(4, 3), column(4), pairs(2, 3), strided(20)
  integer(kind=MPI_COUNT_KIND) :: bigcount, elems
  integer(kind=MPI_ADDRESS_KIND) :: attr, a1, a2, lb, extent
  double precision :: d, t0
  real :: r
  complex(kind=8) :: z
  logical :: flag, lg
  character(len=64) :: value
  type(MPI_Status) :: status, statuses(4)
  type(MPI_Request) :: reqs(4)
  type(MPI_Comm) :: split, dup, dup2
  type(MPI_Datatype) :: rowtype
  type(MPI_Op) :: op
  type(MPI_Info) :: info
  type(MPI_Errhandler) :: errh
  type(MPI_Group) :: group
  integer :: fstatus(MPI_STATUS_SIZE)

  errors = 0
  call MPI_Init()
  t0 = MPI_Wtime()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call check(ierr == MPI_SUCCESS, 'ierror present')
  call PMPI_Comm_rank(MPI_COMM_WORLD, n)
  call check(n == rank, 'profiling interface PMPI_Comm_rank')
  right = mod(rank + 1, nprocs)
  left = mod(rank - 1 + nprocs, nprocs)

  ! Handles: constants, == and /=.
  call check(MPI_COMM_WORLD == MPI_COMM_WORLD .and. MPI_COMM_WORLD /= MPI_COMM_SELF, 'handle comparison')
  call check(MPI_COMM_NULL /= MPI_COMM_WORLD .and. MPI_REQUEST_NULL == MPI_REQUEST_NULL, 'null handles')
  call MPI_Comm_group(MPI_COMM_WORLD, group)
  call MPI_Group_size(group, n)
  call check(n == nprocs, 'group size')
  call MPI_Group_free(group)
  call check(group == MPI_GROUP_NULL, 'group freed to MPI_GROUP_NULL')

  ! Point to point with statuses: a ring.
  sendbuf = rank * 100 + [(i, i = 1, 10)]
  recvbuf = -1
  call MPI_Sendrecv(sendbuf, 7, MPI_INTEGER, right, 11, recvbuf, 10, MPI_INTEGER, left, 11, MPI_COMM_WORLD, status)
  call MPI_Get_count(status, MPI_INTEGER, n)
  call check(status%MPI_SOURCE == left .and. status%MPI_TAG == 11 .and. n == 7, 'sendrecv status')
  call check(all(recvbuf(1:7) == left * 100 + [(i, i = 1, 7)]) .and. recvbuf(8) == -1, 'sendrecv data')
  ! Rank 0 to rank 1 (to itself when alone), received from any source.
  if (rank == 0) call MPI_Isend(sendbuf, 3, MPI_INTEGER, mod(1, nprocs), 12, MPI_COMM_WORLD, reqs(1))
  if (rank == mod(1, nprocs)) then
    call MPI_Recv(recvbuf, 10, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, status)
    call MPI_Get_count(status, MPI_INTEGER, n)
    call check(status%MPI_SOURCE == 0 .and. status%MPI_TAG == 12 .and. n == 3 .and. all(recvbuf(1:3) == [1, 2, 3]), &
               'any source')
  end if
  if (rank == 0) call MPI_Wait(reqs(1), status)
  call MPI_Sendrecv(sendbuf, 1, MPI_INTEGER, MPI_PROC_NULL, 0, recvbuf, 1, MPI_INTEGER, MPI_PROC_NULL, 0, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE)

  ! Status conversions to and from the INTEGER array form.
  ! (Entry 3 of the INTEGER form is MPI_SOURCE in the mpi module.)
  call MPI_Status_f082f(status, fstatus)
  call check(fstatus(3) == status%MPI_SOURCE, 'status_f082f')
  status%MPI_TAG = -5
  call MPI_Status_f2f08(fstatus, status)
  call check(status%MPI_TAG /= -5, 'status_f2f08')

  ! Collectives, with a user-defined operation on pairs.
  n = rank
  call MPI_Allreduce(MPI_IN_PLACE, n, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call check(n == nprocs * (nprocs - 1) / 2, 'allreduce in place')
  call MPI_Op_create(pair_op, .true., op)
  pairs(1, :) = rank + 1
  pairs(2, :) = rank * 10
  call MPI_Allreduce(MPI_IN_PLACE, pairs, 3, MPI_2INTEGER, op, MPI_COMM_WORLD)
  call check(all(pairs(1, :) == nprocs * (nprocs + 1) / 2) .and. all(pairs(2, :) == (nprocs - 1) * 10), 'user op')
  call MPI_Op_free(op)
  call check(op == MPI_OP_NULL, 'op freed')
  recvbuf = -1
  if (rank == 0) sendbuf(1:4) = [4, 3, 2, 1]
  call MPI_Bcast(sendbuf, 4, MPI_INTEGER, 0, MPI_COMM_WORLD)
  call check(all(sendbuf(1:4) == [4, 3, 2, 1]), 'bcast')
  call MPI_Barrier(MPI_COMM_WORLD)

  ! A derived datatype: one row of a column-major matrix.
  matrix = reshape([(i, i = 1, 12)], [4, 3])
  call MPI_Type_vector(3, 1, 4, MPI_INTEGER, rowtype)
  call MPI_Type_commit(rowtype)
  call MPI_Type_size(rowtype, sz)
  call check(sz == 12, 'vector type size')
  call MPI_Type_get_extent(rowtype, lb, extent)
  call check(lb == 0 .and. extent == 36, 'vector type extent')
  column = -1
  call MPI_Sendrecv(matrix(2, 1), 1, rowtype, rank, 5, column, 3, MPI_INTEGER, rank, 5, MPI_COMM_WORLD, status)
  call check(all(column(1:3) == [2, 6, 10]), 'row through a vector type')
  call MPI_Type_free(rowtype)

  ! Attributes with a copy callback, through split and dup.
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), -rank, split)
  call MPI_Comm_rank(split, n)
  ! Keys -rank: the highest rank of a colour is rank 0 in it.
  call check(n == (nprocs - 1 - mod(nprocs - 1 - mod(rank, 2), 2) - rank) / 2, 'split rank order')
  call MPI_Comm_size(split, sz)
  call check(sz == (nprocs + 1 - mod(rank, 2)) / 2, 'split size')
  call MPI_Comm_create_keyval(copy_plus_one, count_delete, keyval, 10_MPI_ADDRESS_KIND)
  call MPI_Comm_set_attr(split, keyval, 5_MPI_ADDRESS_KIND)
  call MPI_Comm_dup(split, dup)
  call MPI_Comm_get_attr(dup, keyval, attr, flag)
  call check(flag .and. attr == 16 .and. copies == 1, 'copy callback on dup')
  call MPI_Comm_dup(dup, dup2)
  call MPI_Comm_get_attr(dup2, keyval, attr, flag)
  call check(flag .and. attr == 27, 'copy callback twice')
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, attr, flag)
  call check(flag .and. attr >= 32767, 'MPI_TAG_UB')
  call MPI_Comm_free(dup2)
  call MPI_Comm_free(dup)
  call MPI_Comm_free(split)
  call check(deletes == 3 .and. split == MPI_COMM_NULL, 'delete callbacks')
  call MPI_Comm_free_keyval(keyval)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup)
  call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, keyval, 0_MPI_ADDRESS_KIND)
  call MPI_Comm_set_attr(dup, keyval, 77_MPI_ADDRESS_KIND)
  call MPI_Comm_dup(dup, dup2)
  call MPI_Comm_get_attr(dup2, keyval, attr, flag)
  call check(flag .and. attr == 77, 'MPI_COMM_DUP_FN')
  call MPI_Comm_free(dup2)
  call MPI_Comm_free_keyval(keyval)

  ! Nonblocking: TYPE(MPI_Request) arrays and MPI_Waitall.
  sendbuf = rank
  recvbuf = -1
  call MPI_Irecv(recvbuf(1), 1, MPI_INTEGER, left, 21, MPI_COMM_WORLD, reqs(1))
  call MPI_Irecv(recvbuf(2), 1, MPI_INTEGER, right, 22, MPI_COMM_WORLD, reqs(2))
  call MPI_Isend(sendbuf(1), 1, MPI_INTEGER, right, 21, MPI_COMM_WORLD, reqs(3))
  call MPI_Isend(sendbuf(2), 1, MPI_INTEGER, left, 22, MPI_COMM_WORLD, reqs(4))
  call MPI_Waitall(4, reqs, statuses)
  call check(recvbuf(1) == left .and. recvbuf(2) == right, 'waitall data')
  call check(statuses(1)%MPI_SOURCE == left .and. statuses(2)%MPI_TAG == 22, 'waitall statuses')
  call check(all(reqs == MPI_REQUEST_NULL), 'requests nulled')
  call MPI_Ibarrier(MPI_COMM_WORLD, reqs(1))
  call MPI_Wait(reqs(1), MPI_STATUS_IGNORE)
  call MPI_Irecv(recvbuf, 2, MPI_INTEGER, left, 23, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(sendbuf, 2, MPI_INTEGER, right, 23, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  flag = .false.
  call MPI_Test(reqs(1), flag, status)
  call check(flag, 'test of a null request')

  ! Large-count overloads: INTEGER(KIND=MPI_COUNT_KIND) counts.
  bigcount = 6
  recvbuf = -1
  call MPI_Sendrecv(sendbuf, bigcount, MPI_INTEGER, right, 31, recvbuf, 10_MPI_COUNT_KIND, MPI_INTEGER, left, 31, &
                    MPI_COMM_WORLD, status)
  call MPI_Get_count(status, MPI_INTEGER, elems)
  call check(elems == 6 .and. all(recvbuf(1:6) == left), 'large-count sendrecv, get_count')
  call MPI_Allreduce(MPI_IN_PLACE, recvbuf, 2_MPI_COUNT_KIND, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
  call check(recvbuf(1) == nprocs - 1, 'large-count allreduce')
  call MPI_Type_contiguous(3_MPI_COUNT_KIND, MPI_INTEGER, rowtype)
  call MPI_Type_commit(rowtype)
  call MPI_Type_size(rowtype, elems)
  call check(elems == 12, 'large-count type_size')
  call MPI_Pack_size(2_MPI_COUNT_KIND, rowtype, MPI_COMM_WORLD, elems)
  call check(elems >= 24, 'large-count pack_size')
  call MPI_Type_free(rowtype)

  ! Errors returned as codes, with and without ierror.
  call MPI_Comm_dup(MPI_COMM_WORLD, dup)
  call MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN)
  call MPI_Send(sendbuf, 1, MPI_INTEGER, nprocs + 3, 0, dup, ierr)
  call MPI_Error_class(ierr, cls)
  call check(cls == MPI_ERR_RANK, 'invalid rank returns MPI_ERR_RANK')
  ! Without ierror the call returns too (the job would end otherwise).
  call MPI_Send(sendbuf, 1, MPI_INTEGER, nprocs + 3, 0, dup)
  ! Non-contiguous sections. A blocking call works on them (GridMPI
  ! copies them in and out).
  strided = [(i, i = 1, 20)]
  matrix = 0
  call MPI_Sendrecv(strided(1:20:2), 3, MPI_INTEGER, rank, 0, matrix(2, :), 3, MPI_INTEGER, rank, 0, dup, &
                    MPI_STATUS_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS .and. all(matrix(2, :) == [1, 3, 5]) .and. all(matrix(1, :) == 0), &
             'blocking call on sections')
  call MPI_Allreduce(strided(2:20:2), matrix(3, :), 3, MPI_INTEGER, MPI_SUM, dup, ierr)
  call check(ierr == MPI_SUCCESS .and. all(matrix(3, :) == nprocs * [2, 4, 6]), 'allreduce on sections')
  recvbuf = -1
  ! A buffer with its own count and datatype may be a section in a
  ! nonblocking call too (tests/fortran/f08_sections.f90 has more).
  call MPI_Isend(strided(1:20:2), 10, MPI_INTEGER, rank, 1, dup, reqs(1), ierr)
  call MPI_Recv(recvbuf, 10, MPI_INTEGER, rank, 1, dup, MPI_STATUS_IGNORE)
  call MPI_Wait(reqs(1), MPI_STATUS_IGNORE)
  call check(ierr == MPI_SUCCESS .and. all(recvbuf == [(i, i = 1, 20, 2)]), 'nonblocking call on a section')
  ! A user error handler in the f08 form.
  call MPI_Comm_create_errhandler(record_error, errh)
  call MPI_Comm_set_errhandler(dup, errh)
  call MPI_Errhandler_free(errh)
  call MPI_Recv(recvbuf, 1, MPI_INTEGER, nprocs + 7, 0, dup, MPI_STATUS_IGNORE, ierr)
  call MPI_Error_class(handler_code, cls)
  call check(handler_calls == 1 .and. cls == MPI_ERR_RANK .and. ierr /= MPI_SUCCESS, 'user error handler')
  call MPI_Comm_free(dup)

  ! MPI_SIZEOF over types and kinds.
  call MPI_Sizeof(n, sz)
  call check(sz == 4, 'sizeof integer')
  call MPI_Sizeof(d, sz, ierr)
  call check(sz == 8 .and. ierr == MPI_SUCCESS, 'sizeof double')
  call MPI_Sizeof(z, sz)
  call check(sz == 16, 'sizeof complex(8)')
  call MPI_Sizeof(matrix, sz)
  call check(sz == 4, 'sizeof array element')
  call MPI_Sizeof(lg, sz)
  call MPI_Sizeof(r, n)
  call check(sz == 4 .and. n == 4, 'sizeof logical, real')

  ! Info strings.
  call MPI_Info_create(info)
  call MPI_Info_set(info, 'gridmpi_key', 'some value')
  buflen = len(value)
  call MPI_Info_get_string(info, 'gridmpi_key', buflen, value, flag)
  call check(flag .and. value == 'some value' .and. buflen == 10, 'info get_string')
  buflen = 4
  call MPI_Info_get_string(info, 'gridmpi_key', buflen, value, flag)
  call check(flag .and. value == 'some' .and. buflen == 10, 'info get_string, short')
  call MPI_Info_get_nkeys(info, n)
  call check(n == 1, 'info nkeys')
  call MPI_Info_free(info)
  call check(info == MPI_INFO_NULL, 'info freed')

  ! Addresses.
  call MPI_Get_address(matrix(1, 1), a1)
  call MPI_Get_address(matrix(1, 2), a2)
  call check(MPI_Aint_diff(a2, a1) == 16 .and. MPI_Aint_add(a1, 16_MPI_ADDRESS_KIND) == a2, 'aint add/diff')
  call MPI_F_sync_reg(matrix)
  d = MPI_Wtime() - t0
  call check(d >= 0 .and. MPI_Wtick() > 0, 'wtime')

  call MPI_Finalize()
  if (errors /= 0) then
    print *, 'rank', rank, ':', errors, 'failures'
    stop 1
  end if
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
