! gridmpi-test: ranks=1,2 mpich-abi=yes
! MPI_Comm_spawn and MPI_Comm_spawn_multiple from Fortran (the mpi
! module): CHARACTER arrays as argument vectors (ended by a blank element),
! ARRAY_OF_ARGV(COUNT, *) with a row per program, MPI_ERRCODES_IGNORE,
! MPI_ARGV_NULL. The program spawns itself: two children with arguments
! 'child' and 'a b', which check them, their parent intercommunicator and
! an allreduce across it; then two programs of one process each with
! arguments 'multi' and their index, which each checks against MPI_APPNUM;
! then a missing program, which fails with MPI_ERR_SPAWN.
program dyn_spawn
  use mpi
  implicit none
  integer :: ierr, nerr, rank, nprocs, parent, inter, rsize, total, one, cls, i
  integer :: codes(2)
  character(len=16) :: args(3), arg1, arg2
  character(len=256) :: self
  character(len=256) :: cmds(2)
  character(len=8) :: argvs(2, 3)
  integer :: procs(2), infos(2)
  integer(kind=MPI_ADDRESS_KIND) :: appnum
  logical :: flag

  nerr = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call MPI_Comm_get_parent(parent, ierr)
  if (parent /= MPI_COMM_NULL) then
    call get_command_argument(1, arg1)
    call get_command_argument(2, arg2)
    call MPI_Comm_remote_size(parent, rsize, ierr)
    call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, appnum, flag, ierr)
    if (arg1 == 'child') then
      call check(command_argument_count() == 2 .and. arg2 == 'a b', 'the child''s arguments')
      call check(nprocs == 2, 'two children')
      one = 1
      call MPI_Allreduce(one, total, 1, MPI_INTEGER, MPI_SUM, parent, ierr)
      call check(total == rsize, 'the allreduce across gives the parents'' count')
    else
      call check(arg1 == 'multi' .and. command_argument_count() == 2, 'spawn_multiple''s arguments')
      call check(flag .and. appnum == merge(0, 1, arg2 == '0'), 'MPI_APPNUM is the program''s index')
      call MPI_Barrier(parent, ierr)
    end if
    call MPI_Comm_disconnect(parent, ierr)
    call check(parent == MPI_COMM_NULL, 'disconnect sets MPI_COMM_NULL')
    call finish()
  end if

  call get_command_argument(0, self)
  args(1) = 'child'
  args(2) = 'a b'
  args(3) = ' '
  codes = -1
  call MPI_Comm_spawn(self, args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, codes, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Comm_spawn')
  call check(all(codes == MPI_SUCCESS), 'the error codes are MPI_SUCCESS')
  call MPI_Comm_remote_size(inter, rsize, ierr)
  call check(rsize == 2, 'two children')
  one = 1
  call MPI_Allreduce(one, total, 1, MPI_INTEGER, MPI_SUM, inter, ierr)
  call check(total == 2, 'the allreduce across gives the children''s count')
  call MPI_Comm_disconnect(inter, ierr)

  cmds = self
  do i = 1, 2
    argvs(i, 1) = 'multi'
    write (argvs(i, 2), '(I1)') i - 1
    argvs(i, 3) = ' '
  end do
  procs = 1
  infos = MPI_INFO_NULL
  call MPI_Comm_spawn_multiple(2, cmds, argvs, procs, infos, 0, MPI_COMM_WORLD, inter, MPI_ERRCODES_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Comm_spawn_multiple')
  call MPI_Comm_remote_size(inter, rsize, ierr)
  call check(rsize == 2, 'two programs of one process')
  call MPI_Barrier(inter, ierr)
  call MPI_Comm_disconnect(inter, ierr)

  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  call MPI_Comm_spawn('/nonexistent/gridmpi-no-such-program', MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, &
       MPI_COMM_WORLD, inter, codes, ierr)
  call MPI_Error_class(ierr, cls, ierr)
  call check(cls == MPI_ERR_SPAWN, 'a missing program fails with MPI_ERR_SPAWN')
  call check(codes(1) /= MPI_SUCCESS, 'its error code says so')
  call finish()

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      nerr = nerr + 1
      print '(A,I0,A,A)', 'rank ', rank, ': failed: ', what
    end if
  end subroutine check

  subroutine finish()
    call MPI_Finalize(ierr)
    if (nerr > 0) then
      print '(A,I0,A,I0,A)', 'rank ', rank, ': ', nerr, ' errors'
      stop 1
    end if
    stop
  end subroutine finish
end program dyn_spawn
