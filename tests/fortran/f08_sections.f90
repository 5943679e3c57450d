! gridmpi-test: ranks=2 timeout=60
! Array sections given to mpi_f08 routines that use the buffer after they
! return, where the buffer comes with its own count and datatype: MPI_Isend
! and MPI_Irecv of a 2-d column slice (MPICH's f08/subarray/test15 was
! refused with MPI_ERR_BUFFER), a reversed section, persistent requests,
! MPI_Ibcast, MPI_Put into a window from a section, a count that covers
! part of a section (and part of an element: COMPLEX items as MPI_REAL),
! and the errors: a count past the section, and MPI_Iallreduce (its two
! buffers share one count and datatype), which still refuses a section.
program f08_sections
  use mpi_f08
  implicit none
  integer :: rank, errs, i, j, ierr
  integer, asynchronous :: a(9, 9), b(9, 9), want(9, 9), v(10), w(10)
  complex, asynchronous :: z(6)
  real, asynchronous :: r(12)
  type(MPI_Request) :: req, reqs(2)
  type(MPI_Win) :: win
  integer(kind=MPI_ADDRESS_KIND) :: wsize

  errs = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
  do i = 1, 9
    do j = 1, 9
      a(j, i) = 10 * j + i
    end do
  end do

  ! A column slice, as MPICH's test15.
  b = 0
  if (rank == 0) then
    call MPI_Isend(a(1:7:3, 2:6:2), 9, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, req)
  else
    call MPI_Irecv(b(1:7:3, 2:6:2), 9, MPI_INTEGER, 0, 1, MPI_COMM_WORLD, req)
  end if
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  if (rank == 1) then
    want = 0
    want(1:7:3, 2:6:2) = a(1:7:3, 2:6:2)
    if (any(b /= want)) call fail('Irecv of a column slice')
  end if

  ! Reversed on one side, a row on the other; a count of 3 of the 5.
  v = -1
  if (rank == 0) then
    call MPI_Isend(a(9:1:-2, 4), 3, MPI_INTEGER, 1, 2, MPI_COMM_WORLD, req)
  else
    call MPI_Irecv(v(2:10:2), 3, MPI_INTEGER, 0, 2, MPI_COMM_WORLD, req)
  end if
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  if (rank == 1) then
    if (v(2) /= a(9, 4) .or. v(4) /= a(7, 4) .or. v(6) /= a(5, 4) .or. v(8) /= -1 .or. any(v(1:9:2) /= -1)) &
      call fail('reversed section, count 3 of 5')
  end if

  ! Persistent requests, started twice.
  b = 0
  if (rank == 0) then
    call MPI_Send_init(a(2:8:2, 1:9:4), 12, MPI_INTEGER, 1, 3, MPI_COMM_WORLD, req)
  else
    call MPI_Recv_init(b(2:8:2, 1:9:4), 12, MPI_INTEGER, 0, 3, MPI_COMM_WORLD, req)
  end if
  do i = 1, 2
    call MPI_Start(req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
  end do
  call MPI_Request_free(req)
  if (rank == 1) then
    want = 0
    want(2:8:2, 1:9:4) = a(2:8:2, 1:9:4)
    if (any(b /= want)) call fail('persistent send and receive of sections')
  end if

  ! Part of an element: 5 REALs of COMPLEX z(1:6:2) are z(1), z(3), and
  ! the real part of z(5).
  r = 0
  z = [(cmplx(i, -i), i = 1, 6)]
  if (rank == 0) then
    call MPI_Isend(z(1:6:2), 5, MPI_REAL, 1, 4, MPI_COMM_WORLD, req)
  else
    call MPI_Irecv(r, 5, MPI_REAL, 0, 4, MPI_COMM_WORLD, req)
  end if
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  if (rank == 1) then
    if (any(r(1:6) /= [1., -1., 3., -3., 5., 0.])) call fail('COMPLEX section as REALs, part of an element')
  end if

  ! A nonblocking collective.
  w = 0
  if (rank == 0) w = [(100 + i, i = 1, 10)]
  call MPI_Ibcast(w(1:10:3), 4, MPI_INTEGER, 0, MPI_COMM_WORLD, req)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  if (w(1) /= 101 .or. w(4) /= 104 .or. w(7) /= 107 .or. w(10) /= 110) call fail('Ibcast of a section')
  if (rank == 1 .and. any(w([2, 3, 5, 6, 8, 9]) /= 0)) call fail('Ibcast wrote outside the section')

  ! One-sided: a section as the origin of MPI_Put.
  v = 0
  wsize = 40
  call MPI_Win_create(v, wsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win)
  call MPI_Win_fence(0, win)
  if (rank == 0) call MPI_Put(a(1:9:4, 9), 3, MPI_INTEGER, 1, 0_MPI_ADDRESS_KIND, 3, MPI_INTEGER, win)
  call MPI_Win_fence(0, win)
  call MPI_Win_free(win)
  if (rank == 1) then
    if (v(1) /= a(1, 9) .or. v(2) /= a(5, 9) .or. v(3) /= a(9, 9) .or. v(4) /= 0) call fail('MPI_Put from a section')
  end if

  ! A count past the section is an error (MPI_ERR_BUFFER), as is a
  ! section for MPI_Iallreduce.
  call MPI_Isend(a(1:9:2, 1), 6, MPI_INTEGER, 1 - rank, 5, MPI_COMM_WORLD, req, ierr)
  if (ierr /= MPI_ERR_BUFFER) call fail('a count past the section was not refused')
  call MPI_Iallreduce(a(1:9:2, 1), b(1:9:2, 1), 5, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  if (ierr /= MPI_ERR_BUFFER) call fail('MPI_Iallreduce took a section')

  call MPI_Finalize()
  if (errs > 0) stop 1
contains
  subroutine fail(msg)
    character(len=*) :: msg
    print *, 'FAILED on rank', rank, ': ', msg
    errs = errs + 1
  end subroutine
end program
