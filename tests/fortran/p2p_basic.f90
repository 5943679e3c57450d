! gridmpi-test: ranks=2,4 mpich-abi=yes
! Point-to-point with Fortran types: blocking send/recv around a ring,
! status contents, MPI_STATUS_IGNORE (never written), wildcards, probe,
! sendrecv(_replace), MPI_PROC_NULL, synchronous and buffered sends.
program p2p_basic
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, nerr, right, left, i, n
  integer :: status(MPI_STATUS_SIZE)
  integer :: ibuf(10), irecv(10)
  double precision :: dbuf(5), drecv(5)
  complex :: cbuf(3), crecv(3)
  logical :: lbuf(4), lrecv(4), flag
  character(len=13) :: sbuf, srecv
  integer(kind=8) :: i8(2), i8r(2)
  character, allocatable :: bsendbuf(:)
  integer :: bsize, dsize

  nerr = 0
  call MPI_Init(ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Init ierr')
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank - 1 + nprocs, nprocs)

  ! Ring of every type: even ranks send first.
  ibuf = (/ (rank * 100 + i, i = 1, 10) /)
  dbuf = (/ (rank + 0.25d0 * i, i = 1, 5) /)
  cbuf = (/ (cmplx(rank, -i), i = 1, 3) /)
  lbuf = (/ .true., .false., mod(rank, 2) == 0, .true. /)
  write (sbuf, '(a,i3.3)') 'from rank ', rank
  i8 = (/ 2_8**40 + rank, -5_8 /)
  if (mod(rank, 2) == 0) then
    call sendall(right)
    call recvall(left)
  else
    call recvall(left)
    call sendall(right)
  end if
  call check(all(irecv == (/ (left * 100 + i, i = 1, 10) /)), 'INTEGER ring')
  call check(all(drecv == (/ (left + 0.25d0 * i, i = 1, 5) /)), 'DOUBLE PRECISION ring')
  call check(all(crecv == (/ (cmplx(left, -i), i = 1, 3) /)), 'COMPLEX ring')
  call check(lrecv(1) .and. .not. lrecv(2) .and. (lrecv(3) .eqv. (mod(left, 2) == 0)), 'LOGICAL ring')
  call check(srecv(1:10) == 'from rank ', 'CHARACTER ring')
  call check(i8r(1) == 2_8**40 + left .and. i8r(2) == -5_8, 'INTEGER*8 ring')

  ! Status contents, wildcards, MPI_STATUS_IGNORE.
  if (rank == 0) then
    do i = 1, nprocs - 1
      call MPI_Recv(irecv, 10, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, status, ierr)
      call MPI_Get_count(status, MPI_INTEGER, n, ierr)
      call check(n == status(MPI_SOURCE) + 1, 'Get_count of a wildcard receive')
      call check(status(MPI_TAG) == 40 + status(MPI_SOURCE), 'status(MPI_TAG)')
      call check(irecv(1) == status(MPI_SOURCE), 'wildcard data')
    end do
    do i = 1, nprocs - 1
      call MPI_Send(i, 1, MPI_INTEGER, i, 76, MPI_COMM_WORLD, ierr)
      call MPI_Recv(irecv, 10, MPI_INTEGER, i, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call check(irecv(1) == -i, 'receive with MPI_STATUS_IGNORE')
      call check(MPI_STATUS_IGNORE(MPI_TAG) /= 77, 'MPI_STATUS_IGNORE must not be written')
    end do
  else
    ibuf = rank
    call MPI_Send(ibuf, rank + 1, MPI_INTEGER, 0, 40 + rank, MPI_COMM_WORLD, ierr)
    call MPI_Recv(n, 1, MPI_INTEGER, 0, 76, MPI_COMM_WORLD, status, ierr)
    ibuf(1) = -rank
    call MPI_Send(ibuf, 1, MPI_INTEGER, 0, 77, MPI_COMM_WORLD, ierr)
  end if

  ! Probe and Iprobe (LOGICAL flag).
  if (rank == 1) then
    dbuf = 3.5d0
    call MPI_Send(dbuf, 3, MPI_DOUBLE_PRECISION, 0, 5, MPI_COMM_WORLD, ierr)
  else if (rank == 0) then
    flag = .false.
    do while (.not. flag)
      call MPI_Iprobe(1, 5, MPI_COMM_WORLD, flag, status, ierr)
    end do
    call MPI_Probe(1, 5, MPI_COMM_WORLD, status, ierr)
    call MPI_Get_count(status, MPI_DOUBLE_PRECISION, n, ierr)
    call check(n == 3, 'Probe count')
    call MPI_Recv(drecv, n, MPI_DOUBLE_PRECISION, 1, 5, MPI_COMM_WORLD, status, ierr)
    call check(all(drecv(1:3) == 3.5d0), 'probed data')
    call MPI_Iprobe(1, 5, MPI_COMM_WORLD, flag, status, ierr)
    call check(.not. flag, 'Iprobe flag .false. when nothing is pending')
  end if

  ! Sendrecv and Sendrecv_replace around the ring.
  ibuf(1) = rank
  call MPI_Sendrecv(ibuf, 1, MPI_INTEGER, right, 9, irecv, 1, MPI_INTEGER, left, 9, MPI_COMM_WORLD, status, ierr)
  call check(irecv(1) == left .and. status(MPI_SOURCE) == left, 'Sendrecv')
  ibuf(1) = rank * 3
  call MPI_Sendrecv_replace(ibuf, 1, MPI_INTEGER, right, 10, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call check(ibuf(1) == left * 3, 'Sendrecv_replace')

  ! MPI_PROC_NULL.
  call MPI_Recv(irecv, 10, MPI_INTEGER, MPI_PROC_NULL, 1, MPI_COMM_WORLD, status, ierr)
  call MPI_Get_count(status, MPI_INTEGER, n, ierr)
  call check(status(MPI_SOURCE) == MPI_PROC_NULL .and. status(MPI_TAG) == MPI_ANY_TAG .and. n == 0, 'PROC_NULL status')

  ! Synchronous and buffered sends.
  call MPI_Pack_size(10, MPI_INTEGER, MPI_COMM_WORLD, bsize, ierr)
  bsize = bsize + MPI_BSEND_OVERHEAD
  allocate (bsendbuf(bsize))
  call MPI_Buffer_attach(bsendbuf, bsize, ierr)
  ibuf = rank + 1000
  if (mod(rank, 2) == 0) then
    call MPI_Ssend(ibuf, 10, MPI_INTEGER, right, 11, MPI_COMM_WORLD, ierr)
    call MPI_Recv(irecv, 10, MPI_INTEGER, left, 12, MPI_COMM_WORLD, status, ierr)
  else
    call MPI_Recv(irecv, 10, MPI_INTEGER, left, 11, MPI_COMM_WORLD, status, ierr)
    call MPI_Bsend(ibuf, 10, MPI_INTEGER, right, 12, MPI_COMM_WORLD, ierr)
  end if
  call check(all(irecv == left + 1000), 'Ssend/Bsend data')
  call MPI_Buffer_detach(bsendbuf, dsize, ierr)
  call check(dsize == bsize, 'Buffer_detach size')

  call MPI_Finalize(ierr)
  if (nerr /= 0) stop 1

contains

  subroutine sendall(dest)
    integer, intent(in) :: dest
    call MPI_Send(ibuf, 10, MPI_INTEGER, dest, 1, MPI_COMM_WORLD, ierr)
    call MPI_Send(dbuf, 5, MPI_DOUBLE_PRECISION, dest, 2, MPI_COMM_WORLD, ierr)
    call MPI_Send(cbuf, 3, MPI_COMPLEX, dest, 3, MPI_COMM_WORLD, ierr)
    call MPI_Send(lbuf, 4, MPI_LOGICAL, dest, 4, MPI_COMM_WORLD, ierr)
    call MPI_Send(sbuf, 13, MPI_CHARACTER, dest, 5, MPI_COMM_WORLD, ierr)
    call MPI_Send(i8, 2, MPI_INTEGER8, dest, 6, MPI_COMM_WORLD, ierr)
  end subroutine

  subroutine recvall(src)
    integer, intent(in) :: src
    call MPI_Recv(irecv, 10, MPI_INTEGER, src, 1, MPI_COMM_WORLD, status, ierr)
    call check(status(MPI_SOURCE) == src .and. status(MPI_TAG) == 1, 'status fields')
    call MPI_Recv(drecv, 5, MPI_DOUBLE_PRECISION, src, 2, MPI_COMM_WORLD, status, ierr)
    call MPI_Recv(crecv, 3, MPI_COMPLEX, src, 3, MPI_COMM_WORLD, status, ierr)
    call MPI_Recv(lrecv, 4, MPI_LOGICAL, src, 4, MPI_COMM_WORLD, status, ierr)
    call MPI_Recv(srecv, 13, MPI_CHARACTER, src, 5, MPI_COMM_WORLD, status, ierr)
    call MPI_Recv(i8r, 2, MPI_INTEGER8, src, 6, MPI_COMM_WORLD, status, ierr)
    call check(ierr == MPI_SUCCESS, 'recv ierr')
  end subroutine

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (.not. cond) then
      nerr = nerr + 1
      print '(a,i0,2a)', 'rank ', rank, ' FAILED: ', what
    end if
  end subroutine
end program
