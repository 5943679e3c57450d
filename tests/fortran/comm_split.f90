! gridmpi-test: ranks=1,3,4 mpich-abi=yes
! Communicator split (color, key order, MPI_UNDEFINED), dup, compare,
! groups, communicators from groups; attributes from Fortran: predefined
! keys (Fortran values differ from C's), user keyvals with Fortran copy and
! delete callbacks and the predefined MPI_COMM_DUP_FN / MPI_NULL_COPY_FN.
program comm_split
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, nerr, half, hrank, hsize, dup, res, i, peer, v
  integer :: nullcomm, wgroup, egroup, ecomm, erank
  integer :: key_dup, key_user, key_null, key_old, ranks1(2), ranks2(2)
  integer(kind=MPI_ADDRESS_KIND) :: val, extra
  integer :: ival
  logical :: flag
  integer :: status(MPI_STATUS_SIZE)
  integer :: copies, deletes
  common /attr_log/ copies, deletes
  external :: my_copy, my_delete, old_copy

  nerr = 0
  copies = 0; deletes = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)

  ! Split by parity, ordered by descending rank.
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), -rank, half, ierr)
  call MPI_Comm_rank(half, hrank, ierr)
  call MPI_Comm_size(half, hsize, ierr)
  call check(hsize == (nprocs + 1 - mod(rank, 2)) / 2, 'split size')
  ! Keys are -rank: the highest world rank of each half comes first.
  call check(hrank == count((/ (mod(i, 2) == mod(rank, 2) .and. i > rank, i = 0, nprocs - 1) /)), 'split key order')
  ! Ring inside the half by point-to-point.
  peer = mod(hrank + 1, hsize)
  call MPI_Sendrecv(rank, 1, MPI_INTEGER, peer, 1, v, 1, MPI_INTEGER, mod(hrank - 1 + hsize, hsize), 1, half, status, ierr)
  call check(mod(v, 2) == mod(rank, 2), 'messages stay within the split')
  call MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, 0, nullcomm, ierr)
  call check(nullcomm == MPI_COMM_NULL, 'MPI_UNDEFINED color gives MPI_COMM_NULL')
  call MPI_Comm_test_inter(half, flag, ierr)
  call check(.not. flag, 'Comm_test_inter')

  ! Predefined attributes: Fortran keys are C's + 1 and values come by value.
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, val, flag, ierr)
  call check(flag .and. val >= 32767, 'MPI_TAG_UB attribute')
  call MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, ival, flag, ierr)
  call check(flag .and. ival == val, 'MPI_ATTR_GET of MPI_TAG_UB')
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, val, flag, ierr)
  call check(.not. flag .or. val == 0 .or. val == 1, 'MPI_WTIME_IS_GLOBAL is a LOGICAL-like value')

  ! User keyvals.
  extra = 1000
  call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, key_dup, extra, ierr)
  call MPI_Comm_create_keyval(my_copy, my_delete, key_user, extra, ierr)
  call MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, key_null, extra, ierr)
  call MPI_Keyval_create(old_copy, MPI_NULL_DELETE_FN, key_old, 7, ierr)
  call MPI_Comm_set_attr(half, key_dup, 2_MPI_ADDRESS_KIND**40 + 5, ierr)
  call MPI_Comm_set_attr(half, key_user, 17_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_set_attr(half, key_null, 99_MPI_ADDRESS_KIND, ierr)
  call MPI_Attr_put(half, key_old, -3, ierr)
  call MPI_Comm_get_attr(half, key_user, val, flag, ierr)
  call check(flag .and. val == 17, 'Comm_get_attr of a user key')
  call MPI_Comm_dup(half, dup, ierr)
  call MPI_Comm_compare(half, dup, res, ierr)
  call check(res == MPI_CONGRUENT, 'Comm_compare of a dup')
  call MPI_Comm_get_attr(dup, key_dup, val, flag, ierr)
  call check(flag .and. val == 2_MPI_ADDRESS_KIND**40 + 5, 'MPI_COMM_DUP_FN copies the value')
  call MPI_Comm_get_attr(dup, key_user, val, flag, ierr)
  call check(flag .and. val == 17 + 1000, 'Fortran copy callback (value + extra_state)')
  call check(copies == 1, 'copy callback called once')
  call MPI_Comm_get_attr(dup, key_null, val, flag, ierr)
  call check(.not. flag, 'MPI_COMM_NULL_COPY_FN does not copy')
  call MPI_Attr_get(dup, key_old, ival, flag, ierr)
  call check(flag .and. ival == -3 * 7, 'MPI-1 INTEGER copy callback')
  call MPI_Comm_delete_attr(dup, key_user, ierr)
  call check(deletes == 1, 'Fortran delete callback on Comm_delete_attr')
  call MPI_Comm_free(dup, ierr)
  call check(dup == MPI_COMM_NULL, 'Comm_free')
  call MPI_Comm_free_keyval(key_null, ierr)
  call check(key_null == MPI_KEYVAL_INVALID, 'Comm_free_keyval')

  ! Groups and a communicator of the even ranks.
  call MPI_Comm_group(MPI_COMM_WORLD, wgroup, ierr)
  call MPI_Group_incl(wgroup, (nprocs + 1) / 2, (/ (2 * i, i = 0, (nprocs + 1) / 2 - 1) /), egroup, ierr)
  ranks1 = (/ 0, 1 /)
  call MPI_Group_translate_ranks(egroup, min(2, (nprocs + 1) / 2), ranks1, wgroup, ranks2, ierr)
  call check(ranks2(1) == 0 .and. (nprocs < 3 .or. ranks2(2) == 2), 'Group_translate_ranks')
  call MPI_Comm_create(MPI_COMM_WORLD, egroup, ecomm, ierr)
  if (mod(rank, 2) == 0) then
    call MPI_Comm_rank(ecomm, erank, ierr)
    call check(erank == rank / 2, 'rank in a communicator from a group')
    call MPI_Comm_free(ecomm, ierr)
  else
    call check(ecomm == MPI_COMM_NULL, 'Comm_create outside the group')
  end if
  call MPI_Group_free(egroup, ierr)
  call MPI_Group_free(wgroup, ierr)
  call check(wgroup == MPI_GROUP_NULL, 'Group_free')

  call MPI_Comm_free(half, ierr)
  call check(deletes == 1, 'no delete callback without the attribute')
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

subroutine my_copy(oldcomm, keyval, extra_state, attribute_val_in, attribute_val_out, flag, ierror)
  use mpi
  implicit none
  integer :: oldcomm, keyval, ierror
  integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
  logical :: flag
  integer :: copies, deletes
  common /attr_log/ copies, deletes
  copies = copies + 1
  attribute_val_out = attribute_val_in + extra_state
  flag = .true.
  ierror = MPI_SUCCESS
end subroutine

subroutine my_delete(comm, keyval, attribute_val, extra_state, ierror)
  use mpi
  implicit none
  integer :: comm, keyval, ierror
  integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
  integer :: copies, deletes
  common /attr_log/ copies, deletes
  if (attribute_val == 17 + 1000 .and. extra_state == 1000) deletes = deletes + 1
  ierror = MPI_SUCCESS
end subroutine

subroutine old_copy(oldcomm, keyval, extra_state, attribute_val_in, attribute_val_out, flag, ierror)
  implicit none
  integer :: oldcomm, keyval, extra_state, attribute_val_in, attribute_val_out, ierror
  logical :: flag
  attribute_val_out = attribute_val_in * extra_state
  flag = .true.
  ierror = 0
end subroutine
