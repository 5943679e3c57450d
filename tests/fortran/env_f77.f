! gridmpi-test: ranks=2 mpich-abi=yes
! Fixed source form with include 'mpif.h' (as the NAS Parallel Benchmarks
! are written): environment inquiries, MPI_WTIME/MPI_WTICK as functions,
! MPI_PCONTROL without IERROR, LOGICAL results, a send and receive.
      program envf77
      implicit none
      include 'mpif.h'
      integer ierr, rank, nprocs, nerr, provided, version, subver
      integer buf(3), status(MPI_STATUS_SIZE)
      logical flag
      double precision t0, t1, tick
      nerr = 0
      call MPI_INITIALIZED(flag, ierr)
      if (flag) nerr = nerr + 1
      call MPI_INIT(ierr)
      call MPI_INITIALIZED(flag, ierr)
      if (.not. flag) nerr = nerr + 1
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
      call MPI_QUERY_THREAD(provided, ierr)
      if (provided .lt. MPI_THREAD_SINGLE) nerr = nerr + 1
      call MPI_IS_THREAD_MAIN(flag, ierr)
      if (.not. flag) nerr = nerr + 1
      call MPI_GET_VERSION(version, subver, ierr)
      if (version .lt. 3) nerr = nerr + 1
      t0 = MPI_WTIME()
      tick = MPI_WTICK()
      if (tick .le. 0d0 .or. tick .gt. 1d0) nerr = nerr + 1
      call MPI_PCONTROL(1)
      if (rank .eq. 0) then
         buf(1) = 11
         buf(2) = 22
         buf(3) = 33
         call MPI_SEND(buf, 3, MPI_INTEGER, 1, 5, MPI_COMM_WORLD, ierr)
      else if (rank .eq. 1) then
         call MPI_RECV(buf, 3, MPI_INTEGER, 0, 5, MPI_COMM_WORLD,
     &                 status, ierr)
         if (buf(3) .ne. 33 .or. status(MPI_SOURCE) .ne. 0) then
            nerr = nerr + 1
         endif
      endif
      t1 = MPI_WTIME()
      if (t1 .lt. t0) nerr = nerr + 1
      call MPI_FINALIZED(flag, ierr)
      if (flag) nerr = nerr + 1
      call MPI_FINALIZE(ierr)
      call MPI_FINALIZED(flag, ierr)
      if (.not. flag) nerr = nerr + 1
      if (nerr .ne. 0) then
         print *, 'rank', rank, 'FAILED checks:', nerr
         stop 1
      endif
      end
