! gridmpi-test: ranks=1,2,3
! Sessions and partitioned communication from Fortran (the mpi module):
! MPI_Session_init, the process sets by MPI_Session_get_nth_pset (the
! length-only query and the name), a group and a communicator made from
! mpi://WORLD, a partitioned send and receive around a ring of it (two
! rounds, partitions readied in reverse order, MPI_Parrived's LOGICAL
! flag), MPI_Session_finalize setting MPI_SESSION_NULL.
program session_part
  use mpi
  implicit none
  integer, parameter :: nparts = 4, per = 8
  integer :: ierr, nerr, session, group, comm, rank, nprocs, n, i, k, p, round
  integer :: plen, right, left, sreq, rreq
  integer(kind=MPI_COUNT_KIND) :: count
  integer :: outbuf(nparts * per), inbuf(nparts * per)
  character(len=MPI_MAX_PSET_NAME_LEN) :: name
  logical :: found_world, flag

  nerr = 0
  rank = -1
  call MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, session, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Session_init')
  call MPI_Session_get_num_psets(session, MPI_INFO_NULL, n, ierr)
  call check(n >= 2, 'at least two process sets')
  found_world = .false.
  do i = 0, n - 1
    plen = 0
    call MPI_Session_get_nth_pset(session, MPI_INFO_NULL, i, plen, name, ierr)
    call check(plen > 0, 'the length-only query gives a length')
    plen = len(name)
    call MPI_Session_get_nth_pset(session, MPI_INFO_NULL, i, plen, name, ierr)
    if (trim(name) == 'mpi://WORLD') found_world = .true.
  end do
  call check(found_world, 'mpi://WORLD is listed')

  call MPI_Group_from_session_pset(session, 'mpi://WORLD', group, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Group_from_session_pset')
  call MPI_Comm_create_from_group(group, 'gridmpi.test.fortran', MPI_INFO_NULL, MPI_ERRORS_RETURN, comm, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Comm_create_from_group')
  call MPI_Comm_rank(comm, rank, ierr)
  call MPI_Comm_size(comm, nprocs, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank + nprocs - 1, nprocs)

  count = per
  call MPI_Psend_init(outbuf, nparts, count, MPI_INTEGER, right, 5, comm, MPI_INFO_NULL, sreq, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Psend_init')
  call MPI_Precv_init(inbuf, nparts, count, MPI_INTEGER, left, 5, comm, MPI_INFO_NULL, rreq, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Precv_init')
  do round = 1, 2
    do k = 1, nparts * per
      outbuf(k) = 1000 * round + 100 * rank + k
    end do
    inbuf = -1
    call MPI_Start(rreq, ierr)
    call MPI_Start(sreq, ierr)
    do p = nparts - 1, 0, -1
      call MPI_Pready(p, sreq, ierr)
      call check(ierr == MPI_SUCCESS, 'MPI_Pready')
    end do
    do p = 0, nparts - 1
      flag = .false.
      do k = 1, 100000000
        call MPI_Parrived(rreq, p, flag, ierr)
        if (flag) exit
      end do
      call check(flag, 'MPI_Parrived becomes .true.')
    end do
    call MPI_Wait(sreq, MPI_STATUS_IGNORE, ierr)
    call MPI_Wait(rreq, MPI_STATUS_IGNORE, ierr)
    do k = 1, nparts * per
      call check(inbuf(k) == 1000 * round + 100 * left + k, 'partitioned data')
    end do
  end do
  call MPI_Request_free(sreq, ierr)
  call MPI_Request_free(rreq, ierr)
  call MPI_Comm_free(comm, ierr)
  call MPI_Group_free(group, ierr)
  call MPI_Session_finalize(session, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Session_finalize')
  call check(session == MPI_SESSION_NULL, 'MPI_Session_finalize sets MPI_SESSION_NULL')
  if (nerr > 0) stop 1

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
