! gridmpi-test: ranks=2 mpich-abi=yes
! The profiling interface from Fortran: the program's own MPI_SEND replaces
! the library's and forwards to PMPI_SEND.
program pmpi_profile
  use mpi
  implicit none
  integer :: ierr, rank, buf, status(MPI_STATUS_SIZE)
  integer :: sends
  common /prof/ sends
  sends = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  buf = 5
  if (rank == 0) then
    call MPI_Send(buf, 1, MPI_INTEGER, 1, 0, MPI_COMM_WORLD, ierr)
    call MPI_Send(buf, 1, MPI_INTEGER, 1, 0, MPI_COMM_WORLD, ierr)
  else
    call MPI_Recv(buf, 1, MPI_INTEGER, 0, 0, MPI_COMM_WORLD, status, ierr)
    call MPI_Recv(buf, 1, MPI_INTEGER, 0, 0, MPI_COMM_WORLD, status, ierr)
  end if
  call MPI_Finalize(ierr)
  if (rank == 0 .and. sends /= 2) then
    print *, 'FAILED: the profiling MPI_SEND saw', sends, 'calls'
    stop 1
  end if
  if (buf /= 5) stop 1
end program

subroutine MPI_Send(buf, count, datatype, dest, tag, comm, ierror)
  implicit none
  integer :: buf(*), count, datatype, dest, tag, comm, ierror
  integer :: sends
  common /prof/ sends
  sends = sends + 1
  call PMPI_Send(buf, count, datatype, dest, tag, comm, ierror)
end subroutine
