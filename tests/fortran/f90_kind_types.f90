! gridmpi-test: ranks=1,2 timeout=60
! MPI_TYPE_CREATE_F90_REAL/COMPLEX(p, r) give the datatype of
! REAL(KIND=SELECTED_REAL_KIND(p, r)) (MPI 4.1 19.1.9): with gfortran on
! x86-64, SELECTED_REAL_KIND(16) is KIND=10, the x87 extended format, which
! GridMPI gave the 16-byte REAL*16 type for (a sum of 1.5 on each of 2
! ranks came out 1.5); reductions over every kind the calls can select
! must add up. The calls give one handle per (p, r) (a new one each time
! could never be freed), and freeing it is refused.
program f90_kind_types
  use mpi
  implicit none
  integer, parameter :: k4 = selected_real_kind(6), k8 = selected_real_kind(15)
  integer, parameter :: k10 = selected_real_kind(16), k16 = selected_real_kind(30)
  real(kind=k4) :: a4(2), b4(2)
  real(kind=k8) :: a8(2), b8(2)
  real(kind=k10) :: a10(2), b10(2)
  real(kind=k16) :: a16(2), b16(2)
  complex(kind=k10) :: c10(1), d10(1)
  integer :: ierr, t4, t8, t10, t16, tc10, again, rank, np, sz, errs
  errs = 0
  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  call mpi_comm_size(MPI_COMM_WORLD, np, ierr)
  call mpi_type_create_f90_real(6, MPI_UNDEFINED, t4, ierr)
  call mpi_type_create_f90_real(15, MPI_UNDEFINED, t8, ierr)
  call mpi_type_create_f90_real(16, MPI_UNDEFINED, t10, ierr)
  call mpi_type_create_f90_real(30, MPI_UNDEFINED, t16, ierr)
  call mpi_type_create_f90_complex(16, MPI_UNDEFINED, tc10, ierr)
  call mpi_type_size(t10, sz, ierr)
  if (sz /= storage_size(a10(1)) / 8) call fail('the size of REAL(KIND=SELECTED_REAL_KIND(16))')
  a4 = [1.5_k4, 2.25_k4]; a8 = a4; a10 = a4; a16 = a4
  c10 = (1.5_k10, -2.0_k10)
  call mpi_allreduce(a4, b4, 2, t4, MPI_SUM, MPI_COMM_WORLD, ierr)
  call mpi_allreduce(a8, b8, 2, t8, MPI_SUM, MPI_COMM_WORLD, ierr)
  call mpi_allreduce(a10, b10, 2, t10, MPI_SUM, MPI_COMM_WORLD, ierr)
  call mpi_allreduce(a16, b16, 2, t16, MPI_SUM, MPI_COMM_WORLD, ierr)
  call mpi_allreduce(c10, d10, 1, tc10, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (any(b4 /= a4 * np)) call fail('sum of SELECTED_REAL_KIND(6)')
  if (any(b8 /= a8 * np)) call fail('sum of SELECTED_REAL_KIND(15)')
  if (any(b10 /= a10 * np)) call fail('sum of SELECTED_REAL_KIND(16)')
  if (any(b16 /= a16 * np)) call fail('sum of SELECTED_REAL_KIND(30)')
  if (d10(1) /= c10(1) * np) call fail('sum of COMPLEX(KIND=SELECTED_REAL_KIND(16))')
  call mpi_type_create_f90_real(16, MPI_UNDEFINED, again, ierr)
  if (again /= t10) call fail('a second call gave another handle')
  call mpi_comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN, ierr)
  call mpi_type_free(again, ierr)
  if (ierr == MPI_SUCCESS) call fail('freeing an f90 type was accepted')
  call mpi_finalize(ierr)
  if (errs > 0) stop 1
contains
  subroutine fail(msg)
    character(len=*) :: msg
    print *, 'FAILED on rank', rank, ': ', msg
    errs = errs + 1
  end subroutine
end program
