! gridmpi-test: ranks=1 mpich-abi=yes
! Every Fortran datatype through the reduction kernels (MPI_Reduce_local),
! and user operations written in Fortran (MPI_Op_create, LOGICAL commute).
program reduce_local_types
  use mpi
  implicit none
  integer :: ierr, nerr, op, op2
  integer :: i4(3), o4(3)
  integer(kind=1) :: i1(2), o1(2)
  integer(kind=2) :: i2(2), o2(2)
  integer(kind=8) :: i8(2), o8(2)
  real :: r4(2), q4(2)
  double precision :: r8(2), q8(2)
  real(kind=16) :: r16(2), q16(2)
  complex :: c8(2), d8(2)
  double complex :: c16(2), d16(2)
  logical :: l(4), m(4)
  integer :: p2(2, 2), s2(2, 2)
  real :: pr(2, 2), sr(2, 2)
  double precision :: pd(2, 2), sd(2, 2)
  logical :: commute
  external :: twice_plus, int_max

  nerr = 0
  call MPI_Init(ierr)

  i4 = (/ 1, 2, 3 /); o4 = (/ 10, 20, 30 /)
  call MPI_Reduce_local(i4, o4, 3, MPI_INTEGER, MPI_SUM, ierr)
  call check(all(o4 == (/ 11, 22, 33 /)) .and. ierr == MPI_SUCCESS, 'INTEGER SUM')
  call MPI_Reduce_local(i4, o4, 3, MPI_INTEGER, MPI_PROD, ierr)
  call check(all(o4 == (/ 11, 44, 99 /)), 'INTEGER PROD')
  i4 = (/ 12, 10, 6 /); o4 = (/ 10, 12, 5 /)
  call MPI_Reduce_local(i4, o4, 3, MPI_INTEGER, MPI_BAND, ierr)
  call check(all(o4 == (/ 8, 8, 4 /)), 'INTEGER BAND')
  call MPI_Reduce_local(i4, o4, 3, MPI_INTEGER, MPI_BXOR, ierr)
  call check(all(o4 == (/ 4, 2, 2 /)), 'INTEGER BXOR')
  i1 = (/ 5_1, -3_1 /); o1 = (/ 7_1, -9_1 /)
  call MPI_Reduce_local(i1, o1, 2, MPI_INTEGER1, MPI_MAX, ierr)
  call check(all(o1 == (/ 7_1, -3_1 /)), 'INTEGER1 MAX')
  i2 = (/ 300_2, -3_2 /); o2 = (/ 200_2, -9_2 /)
  call MPI_Reduce_local(i2, o2, 2, MPI_INTEGER2, MPI_MIN, ierr)
  call check(all(o2 == (/ 200_2, -9_2 /)), 'INTEGER2 MIN')
  i8 = (/ 2_8**40, 1_8 /); o8 = (/ 2_8**40, -1_8 /)
  call MPI_Reduce_local(i8, o8, 2, MPI_INTEGER8, MPI_SUM, ierr)
  call check(all(o8 == (/ 2_8**41, 0_8 /)), 'INTEGER8 SUM')
  r4 = (/ 1.5, -2.0 /); q4 = (/ 2.0, 4.0 /)
  call MPI_Reduce_local(r4, q4, 2, MPI_REAL, MPI_PROD, ierr)
  call check(all(q4 == (/ 3.0, -8.0 /)), 'REAL PROD')
  r8 = (/ 0.25d0, 1d300 /); q8 = (/ 0.5d0, 1d300 /)
  call MPI_Reduce_local(r8, q8, 2, MPI_DOUBLE_PRECISION, MPI_SUM, ierr)
  call check(all(q8 == (/ 0.75d0, 2d300 /)), 'DOUBLE PRECISION SUM')
  call MPI_Reduce_local(r8, q8, 2, MPI_REAL8, MPI_MIN, ierr)
  call check(all(q8 == (/ 0.25d0, 1d300 /)), 'REAL8 MIN')
  r16 = (/ 1.0_16 / 3, 2.0_16 /); q16 = (/ 1.0_16 / 3, 0.5_16 /)
  call MPI_Reduce_local(r16, q16, 2, MPI_REAL16, MPI_SUM, ierr)
  call check(all(q16 == (/ 2.0_16 / 3, 2.5_16 /)), 'REAL16 SUM')
  c8 = (/ (1.0, 2.0), (0.0, 1.0) /); d8 = (/ (3.0, -1.0), (0.0, 1.0) /)
  call MPI_Reduce_local(c8, d8, 2, MPI_COMPLEX, MPI_PROD, ierr)
  call check(all(d8 == (/ (5.0, 5.0), (-1.0, 0.0) /)), 'COMPLEX PROD')
  c16 = (/ (1d0, 2d0), (3d0, 4d0) /); d16 = (/ (1d0, 1d0), (1d0, 1d0) /)
  call MPI_Reduce_local(c16, d16, 2, MPI_DOUBLE_COMPLEX, MPI_SUM, ierr)
  call check(all(d16 == (/ (2d0, 3d0), (4d0, 5d0) /)), 'DOUBLE COMPLEX SUM')
  l = (/ .true., .true., .false., .false. /); m = (/ .true., .false., .true., .false. /)
  call MPI_Reduce_local(l, m, 4, MPI_LOGICAL, MPI_LAND, ierr)
  call check(all(m .eqv. (/ .true., .false., .false., .false. /)), 'LOGICAL LAND')
  m = (/ .true., .false., .true., .false. /)
  call MPI_Reduce_local(l, m, 4, MPI_LOGICAL, MPI_LXOR, ierr)
  call check(all(m .eqv. (/ .false., .true., .true., .false. /)), 'LOGICAL LXOR')
  m = (/ .true., .false., .true., .false. /)
  call MPI_Reduce_local(l, m, 4, MPI_LOGICAL, MPI_LOR, ierr)
  call check(all(m .eqv. (/ .true., .true., .true., .false. /)), 'LOGICAL LOR')
  ! Pair types: (value, index) columns.
  p2 = reshape((/ 5, 1, 7, 2 /), (/ 2, 2 /)); s2 = reshape((/ 6, 3, 7, 0 /), (/ 2, 2 /))
  call MPI_Reduce_local(p2, s2, 2, MPI_2INTEGER, MPI_MAXLOC, ierr)
  call check(all(s2 == reshape((/ 6, 3, 7, 0 /), (/ 2, 2 /))), '2INTEGER MAXLOC')
  pr = reshape((/ 1.0, 4.0, 2.0, 5.0 /), (/ 2, 2 /)); sr = reshape((/ 1.0, 3.0, 3.0, 1.0 /), (/ 2, 2 /))
  call MPI_Reduce_local(pr, sr, 2, MPI_2REAL, MPI_MINLOC, ierr)
  call check(all(sr == reshape((/ 1.0, 3.0, 2.0, 5.0 /), (/ 2, 2 /))), '2REAL MINLOC')
  pd = reshape((/ 9d0, 4d0, 2d0, 5d0 /), (/ 2, 2 /)); sd = reshape((/ 1d0, 3d0, 3d0, 1d0 /), (/ 2, 2 /))
  call MPI_Reduce_local(pd, sd, 2, MPI_2DOUBLE_PRECISION, MPI_MAXLOC, ierr)
  call check(all(sd == reshape((/ 9d0, 4d0, 3d0, 1d0 /), (/ 2, 2 /))), '2DOUBLE_PRECISION MAXLOC')

  ! User operations in Fortran.
  call MPI_Op_create(twice_plus, .false., op, ierr)
  call check(ierr == MPI_SUCCESS, 'Op_create')
  call MPI_Op_commutative(op, commute, ierr)
  call check(.not. commute, 'Op_commutative .false.')
  i4 = (/ 1, 2, 3 /); o4 = (/ 10, 20, 30 /)
  call MPI_Reduce_local(i4, o4, 3, MPI_INTEGER, op, ierr)
  call check(all(o4 == (/ 12, 24, 36 /)), 'user op result')
  call MPI_Op_create(int_max, .true., op2, ierr)
  call MPI_Op_commutative(op2, commute, ierr)
  call check(commute, 'Op_commutative .true.')
  call MPI_Reduce_local(i4, o4, 3, MPI_INTEGER, op2, ierr)
  call check(all(o4 == (/ 12, 24, 36 /)), 'second user op')
  call MPI_Op_free(op, ierr)
  call check(op == MPI_OP_NULL, 'Op_free')
  call MPI_Op_free(op2, ierr)

  call MPI_Finalize(ierr)
  if (nerr /= 0) stop 1

contains

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (.not. cond) then
      nerr = nerr + 1
      print '(2a)', 'FAILED: ', what
    end if
  end subroutine
end program

! inoutvec = 2 * invec + inoutvec, for MPI_INTEGER only.
subroutine twice_plus(invec, inoutvec, len, datatype)
  use mpi
  implicit none
  integer :: len, datatype
  integer :: invec(len), inoutvec(len)
  if (datatype /= MPI_INTEGER) then
    print *, 'twice_plus: unexpected datatype', datatype
    return
  end if
  inoutvec = 2 * invec + inoutvec
end subroutine

subroutine int_max(invec, inoutvec, len, datatype)
  implicit none
  integer :: len, datatype
  integer :: invec(len), inoutvec(len)
  inoutvec = max(invec, inoutvec)
end subroutine
