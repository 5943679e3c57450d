! gridmpi-test: ranks=1 mpich-abi=yes
! mpifort accepts what MPICH's wrapper does with gfortran 10 and later:
! a BOZ constant assigned to an INTEGER (NPB's randi8.f has them), which
! gfortran rejects without -fallow-invalid-boz.
      program bozf77
      implicit none
      include 'mpif.h'
      integer ierr, i
      i = z'7fffffff'
      call MPI_Init(ierr)
      if (i .ne. 2147483647) then
         print *, 'BOZ constant read as ', i
         call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
      end if
      call MPI_Finalize(ierr)
      end
