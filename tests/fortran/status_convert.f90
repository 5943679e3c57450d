! gridmpi-test: ranks=1
! MPI-4 status conversions in Fortran (MPI_STATUS_F2F08 / MPI_STATUS_F082F,
! which MPICH 4.0's Fortran library lacks), and MPI_F_SYNC_REG.
program status_convert
  use mpi
  implicit none
  integer :: ierr, status(MPI_STATUS_SIZE), f08(MPI_STATUS_SIZE), back(MPI_STATUS_SIZE), n
  call MPI_Init(ierr)
  status = 0
  status(MPI_SOURCE) = 3; status(MPI_TAG) = 4; status(MPI_ERROR) = MPI_ERR_TAG
  call MPI_Status_set_elements(status, MPI_REAL, 9, ierr)
  call MPI_Status_f2f08(status, f08, ierr)
  call MPI_Status_f082f(f08, back, ierr)
  call MPI_Get_count(back, MPI_REAL, n, ierr)
  call MPI_F_sync_reg(back)
  call MPI_Finalize(ierr)
  if (back(MPI_SOURCE) /= 3 .or. back(MPI_TAG) /= 4 .or. back(MPI_ERROR) /= MPI_ERR_TAG .or. n /= 9) then
    print *, 'FAILED: status round trip', back
    stop 1
  end if
end program
