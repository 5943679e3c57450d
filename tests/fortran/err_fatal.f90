! gridmpi-test: ranks=2 expect=fail stderr=MPI_Send
! The default error handler (MPI_ERRORS_ARE_FATAL) ends the job with a
! message naming the function, when the error comes from a Fortran call.
program err_fatal
  use mpi
  implicit none
  integer :: ierr, rank, buf
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  buf = 1
  if (rank == 0) call MPI_Send(buf, 1, MPI_INTEGER, 5, 0, MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
end program
