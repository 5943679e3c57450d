! gridmpi-test: ranks=1,2,4 mpich-abi=yes
! A generalized request started from Fortran (a user-reported bug: its free
! routine was never called). MPI_WAIT on a completed generalized request
! (or MPI_TEST, MPI_WAITALL, MPI_WAITANY, MPI_TESTALL) calls the query routine, then the free routine,
! each once, with the EXTRA_STATE given to MPI_GREQUEST_START (the
! program's variable itself: what the routines leave there, it sees);
! MPI_REQUEST_FREE calls only the free routine, at MPI_GREQUEST_COMPLETE if
! the request is not complete yet; MPI_CANCEL calls the cancel routine with
! COMPLETE as it is. MPICH 4.0.2 (built with its own wrapper and run with
! its mpiexec) fails the 'before completion' checks only: it calls the free
! routine from MPI_REQUEST_FREE already.
module greq_state
  implicit none
  integer :: queries = 0, frees = 0, cancels = 0
  integer(kind=8) :: seen_extra = 0
  logical :: seen_complete = .false.
end module

subroutine query_fn(extra_state, status, ierror)
  use mpi
  use greq_state
  implicit none
  integer(kind=MPI_ADDRESS_KIND) :: extra_state
  integer :: status(MPI_STATUS_SIZE), ierror
  queries = queries + 1
  seen_extra = extra_state
  call MPI_Status_set_elements(status, MPI_INTEGER, 7, ierror)
  call MPI_Status_set_cancelled(status, .false., ierror)
  status(MPI_SOURCE) = MPI_UNDEFINED
  status(MPI_TAG) = 42
  ierror = MPI_SUCCESS
end subroutine

subroutine free_fn(extra_state, ierror)
  use mpi
  use greq_state
  implicit none
  integer(kind=MPI_ADDRESS_KIND) :: extra_state
  integer :: ierror
  frees = frees + 1
  seen_extra = extra_state
  ierror = MPI_SUCCESS
end subroutine

! Keeps its state in the program's EXTRA_STATE variable itself, which the
! callbacks get by reference (as in MPICH and Open MPI).
subroutine free_dec(extra_state, ierror)
  use mpi
  implicit none
  integer(kind=MPI_ADDRESS_KIND) :: extra_state
  integer :: ierror
  extra_state = extra_state - 1
  ierror = MPI_SUCCESS
end subroutine

subroutine cancel_fn(extra_state, complete, ierror)
  use mpi
  use greq_state
  implicit none
  integer(kind=MPI_ADDRESS_KIND) :: extra_state
  logical :: complete
  integer :: ierror
  cancels = cancels + 1
  seen_complete = complete
  ierror = MPI_SUCCESS
end subroutine

program grequest_free
  use mpi
  use greq_state
  implicit none
  external :: query_fn, free_fn, cancel_fn, free_dec
  integer(kind=MPI_ADDRESS_KIND) :: mine
  integer :: ierr, req, status(MPI_STATUS_SIZE), n, errors, reqs(2), statuses(MPI_STATUS_SIZE, 2)
  logical :: flag
  errors = 0
  call MPI_Init(ierr)

  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, 1234_MPI_ADDRESS_KIND, req, ierr)
  call MPI_Grequest_complete(req, ierr)
  call MPI_Wait(req, status, ierr)
  call MPI_Get_count(status, MPI_INTEGER, n, ierr)
  if (queries /= 1 .or. frees /= 1 .or. seen_extra /= 1234) then
    print *, 'FAILED: wait: queries', queries, 'frees', frees, 'extra', seen_extra
    errors = errors + 1
  end if
  if (n /= 7 .or. status(MPI_TAG) /= 42 .or. req /= MPI_REQUEST_NULL) then
    print *, 'FAILED: wait: count', n, 'tag', status(MPI_TAG), 'request', req
    errors = errors + 1
  end if

  ! Completed, then found complete by MPI_TEST.
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, 99_MPI_ADDRESS_KIND, req, ierr)
  call MPI_Grequest_complete(req, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Test(req, flag, status, ierr)
  end do
  call expect(2, 2, 99_MPI_ADDRESS_KIND, 'test')

  ! Two at once through MPI_WAITALL.
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, 7_MPI_ADDRESS_KIND, reqs(1), ierr)
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, 7_MPI_ADDRESS_KIND, reqs(2), ierr)
  call MPI_Grequest_complete(reqs(2), ierr)
  call MPI_Grequest_complete(reqs(1), ierr)
  call MPI_Waitall(2, reqs, statuses, ierr)
  call expect(4, 4, 7_MPI_ADDRESS_KIND, 'waitall')

  ! MPI_WAITANY and MPI_TESTALL.
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, 3_MPI_ADDRESS_KIND, reqs(1), ierr)
  reqs(2) = MPI_REQUEST_NULL
  call MPI_Grequest_complete(reqs(1), ierr)
  call MPI_Waitany(2, reqs, n, status, ierr)
  if (n /= 1 .or. reqs(1) /= MPI_REQUEST_NULL) then
    print *, 'FAILED: waitany index', n
    errors = errors + 1
  end if
  call expect(5, 5, 3_MPI_ADDRESS_KIND, 'waitany')
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, 4_MPI_ADDRESS_KIND, reqs(1), ierr)
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, 4_MPI_ADDRESS_KIND, reqs(2), ierr)
  call MPI_Grequest_complete(reqs(1), ierr)
  call MPI_Testall(2, reqs, flag, statuses, ierr)
  if (flag) then
    print *, 'FAILED: testall with an incomplete request'
    errors = errors + 1
  end if
  call MPI_Grequest_complete(reqs(2), ierr)
  call MPI_Testall(2, reqs, flag, statuses, ierr)
  if (.not. flag) then
    print *, 'FAILED: testall with both complete'
    errors = errors + 1
  end if
  call expect(7, 7, 4_MPI_ADDRESS_KIND, 'testall')

  ! Completed, then freed without a wait: no query, one free.
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, 8_MPI_ADDRESS_KIND, req, ierr)
  call MPI_Grequest_complete(req, ierr)
  call MPI_Request_free(req, ierr)
  call expect(7, 8, 8_MPI_ADDRESS_KIND, 'request_free')

  ! Freed before completion: the handle's copy stays valid for
  ! MPI_GREQUEST_COMPLETE, which calls the free routine (MPI 4.1 section
  ! 13.2; MPICH 4.0 calls it from MPI_REQUEST_FREE already).
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, 11_MPI_ADDRESS_KIND, req, ierr)
  n = req
  call MPI_Request_free(req, ierr)
  if (req /= MPI_REQUEST_NULL .or. frees /= 8) then
    print *, 'FAILED: request_free before completion: request', req, 'frees', frees
    errors = errors + 1
  end if
  call MPI_Grequest_complete(n, ierr)
  call expect(7, 9, 11_MPI_ADDRESS_KIND, 'complete after request_free')

  ! Cancelled while incomplete, then completed and tested.
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, 5_MPI_ADDRESS_KIND, req, ierr)
  call MPI_Cancel(req, ierr)
  call MPI_Grequest_complete(req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  if (cancels /= 1 .or. seen_complete .or. frees /= 10) then
    print *, 'FAILED: cancel: cancels', cancels, 'complete', seen_complete, 'frees', frees
    errors = errors + 1
  end if

  ! The free routine changes the program's own variable.
  mine = 1
  call MPI_Grequest_start(query_fn, free_dec, cancel_fn, mine, req, ierr)
  call MPI_Grequest_complete(req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  if (mine /= 0) then
    print *, 'FAILED: the free routine decremented its EXTRA_STATE, the variable is', mine
    errors = errors + 1
  end if

  call MPI_Finalize(ierr)
  if (errors /= 0) stop 1
contains
  subroutine expect(q, f, extra, what)
    integer, intent(in) :: q, f
    integer(kind=MPI_ADDRESS_KIND), intent(in) :: extra
    character(len=*), intent(in) :: what
    ! The query routine may run more than once per request (MPI 4.1
    ! allows it), the free routine exactly once.
    if (queries < q .or. frees /= f .or. seen_extra /= extra) then
      print *, 'FAILED: ', what, ': queries', queries, 'frees', frees, 'extra', seen_extra
      errors = errors + 1
    end if
  end subroutine
end program
