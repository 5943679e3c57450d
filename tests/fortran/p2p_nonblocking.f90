! gridmpi-test: ranks=2,4 mpich-abi=yes
! Nonblocking point-to-point: Waitall with a status array and with
! MPI_STATUSES_IGNORE, 1-based indices from Waitany/Testany/Waitsome,
! LOGICAL flags of Test/Testall, persistent requests, cancel.
program p2p_nonblocking
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, nerr, i, j, idx, outcount, nreq, peer
  integer, allocatable :: reqs(:), statuses(:,:), indices(:), inbuf(:), outbuf(:)
  integer :: status(MPI_STATUS_SIZE), req, preqs(2), total
  ! Written and read by MPI behind the compiler's back (persistent requests).
  integer, volatile :: pin, pout
  logical :: flag, seen(64)

  nerr = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  nreq = 2 * (nprocs - 1)
  allocate (reqs(nreq), statuses(MPI_STATUS_SIZE, nreq), indices(nreq), inbuf(nprocs), outbuf(nprocs))

  ! All-to-all by Irecv/Isend, completed by Waitall with statuses.
  call post(100)
  call MPI_Waitall(nreq, reqs, statuses, ierr)
  call check(ierr == MPI_SUCCESS, 'Waitall ierr')
  j = 0
  do i = 0, nprocs - 1
    if (i == rank) cycle
    j = j + 1
    call check(inbuf(i + 1) == i * 1000 + rank, 'Waitall data')
    call check(statuses(MPI_SOURCE, j) == i .and. statuses(MPI_TAG, j) == 100, 'Waitall statuses')
  end do
  call check(all(reqs == MPI_REQUEST_NULL), 'Waitall frees the requests')

  ! Waitall with MPI_STATUSES_IGNORE: the sentinel is never written.
  call post(101)
  call MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE, ierr)
  call check(MPI_STATUSES_IGNORE(MPI_TAG, 1) /= 101, 'MPI_STATUSES_IGNORE must not be written')

  ! Waitany: 1-based indices, each once, then MPI_UNDEFINED.
  call post(102)
  seen = .false.
  do i = 1, nreq
    call MPI_Waitany(nreq, reqs, idx, status, ierr)
    call check(idx >= 1 .and. idx <= nreq, 'Waitany index is 1-based')
    if (idx >= 1 .and. idx <= nreq) then
      call check(.not. seen(idx), 'Waitany index twice')
      seen(idx) = .true.
      call check(reqs(idx) == MPI_REQUEST_NULL, 'Waitany frees reqs(index)')
    end if
  end do
  call MPI_Waitany(nreq, reqs, idx, status, ierr)
  call check(idx == MPI_UNDEFINED, 'Waitany of only null requests')

  ! Testany / Testall flags.
  call post(103)
  total = 0
  do while (total < nreq)
    call MPI_Testany(nreq, reqs, idx, flag, status, ierr)
    if (flag .and. idx /= MPI_UNDEFINED) then
      call check(idx >= 1 .and. idx <= nreq, 'Testany index is 1-based')
      total = total + 1
    end if
  end do
  call MPI_Testall(nreq, reqs, flag, statuses, ierr)
  call check(flag, 'Testall of null requests is .true.')

  ! Waitsome: 1-based indices.
  call post(104)
  total = 0
  seen = .false.
  do while (total < nreq)
    call MPI_Waitsome(nreq, reqs, outcount, indices, statuses, ierr)
    call check(outcount >= 1, 'Waitsome outcount')
    do i = 1, outcount
      call check(indices(i) >= 1 .and. indices(i) <= nreq, 'Waitsome indices are 1-based')
      if (indices(i) >= 1 .and. indices(i) <= nreq) then
        call check(.not. seen(indices(i)), 'Waitsome index twice')
        seen(indices(i)) = .true.
      end if
    end do
    total = total + outcount
  end do
  call MPI_Waitsome(nreq, reqs, outcount, indices, statuses, ierr)
  call check(outcount == MPI_UNDEFINED, 'Waitsome of only null requests')

  ! Test on a single request.
  peer = mod(rank + 1, nprocs)
  call MPI_Irecv(pin, 1, MPI_INTEGER, MPI_ANY_SOURCE, 105, MPI_COMM_WORLD, req, ierr)
  call MPI_Send(rank, 1, MPI_INTEGER, peer, 105, MPI_COMM_WORLD, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Test(req, flag, status, ierr)
  end do
  call check(pin == mod(rank - 1 + nprocs, nprocs) .and. status(MPI_SOURCE) == pin, 'Test data')
  call check(req == MPI_REQUEST_NULL, 'Test frees the request')

  ! Persistent requests, started three times.
  call MPI_Recv_init(pin, 1, MPI_INTEGER, MPI_ANY_SOURCE, 106, MPI_COMM_WORLD, preqs(1), ierr)
  call MPI_Send_init(pout, 1, MPI_INTEGER, peer, 106, MPI_COMM_WORLD, preqs(2), ierr)
  do i = 1, 3
    pout = rank * 10 + i
    call MPI_Startall(2, preqs, ierr)
    call MPI_Waitall(2, preqs, MPI_STATUSES_IGNORE, ierr)
    call check(pin == mod(rank - 1 + nprocs, nprocs) * 10 + i, 'persistent data')
  end do
  call MPI_Request_free(preqs(1), ierr)
  call MPI_Request_free(preqs(2), ierr)
  call check(preqs(1) == MPI_REQUEST_NULL, 'Request_free')

  ! Cancel a receive that never matches.
  call MPI_Irecv(pin, 1, MPI_INTEGER, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, req, ierr)
  call MPI_Cancel(req, ierr)
  call MPI_Wait(req, status, ierr)
  call MPI_Test_cancelled(status, flag, ierr)
  call check(flag, 'Test_cancelled after Cancel')

  call MPI_Finalize(ierr)
  if (nerr /= 0) stop 1

contains

  subroutine post(tag)
    integer, intent(in) :: tag
    integer :: k, n
    n = 0
    do k = 0, nprocs - 1
      if (k == rank) cycle
      n = n + 1
      call MPI_Irecv(inbuf(k + 1), 1, MPI_INTEGER, k, tag, MPI_COMM_WORLD, reqs(n), ierr)
    end do
    do k = 0, nprocs - 1
      if (k == rank) cycle
      n = n + 1
      outbuf(k + 1) = rank * 1000 + k
      call MPI_Isend(outbuf(k + 1), 1, MPI_INTEGER, k, tag, MPI_COMM_WORLD, reqs(n), ierr)
    end do
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
