! gridmpi-test: ranks=1,2
! MPI_Comm_spawn and MPI_Comm_spawn_multiple through the mpi_f08 module
! (run without LD_LIBRARY_PATH: libgridmpi_f08 finds libmpifort itself).
! The program spawns itself twice: two children with the argument 'x',
! then two programs of one process each with no arguments (a blank
! ARRAY_OF_ARGV); each side checks the other's size, the children their
! arguments.
program dyn_spawn_f08
  use mpi_f08
  implicit none
  type(MPI_Comm) :: parent, inter
  character(len=16) :: args(2), argvs(2, 2), arg1
  character(len=256) :: cmds(2)
  integer :: procs(2), rsize, nerr, rank
  type(MPI_Info) :: infos(2)

  nerr = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_get_parent(parent)
  if (parent /= MPI_COMM_NULL) then
    call get_command_argument(1, arg1)
    if (command_argument_count() == 1) call check(arg1 == 'x', 'the child''s argument')
    call MPI_Barrier(parent)
    call MPI_Comm_disconnect(parent)
    call finish()
  end if
  args(1) = 'x'
  args(2) = ' '
  call get_command_argument(0, cmds(1))
  call MPI_Comm_spawn(cmds(1), args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, MPI_ERRCODES_IGNORE)
  call MPI_Comm_remote_size(inter, rsize)
  call check(rsize == 2, 'spawn: two children')
  call MPI_Barrier(inter)
  call MPI_Comm_disconnect(inter)
  cmds(2) = cmds(1)
  argvs = ' '
  procs = 1
  infos = MPI_INFO_NULL
  call MPI_Comm_spawn_multiple(2, cmds, argvs, procs, infos, 0, MPI_COMM_WORLD, inter, MPI_ERRCODES_IGNORE)
  call MPI_Comm_remote_size(inter, rsize)
  call check(rsize == 2, 'spawn_multiple: two children')
  call MPI_Barrier(inter)
  call MPI_Comm_disconnect(inter)
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
    call MPI_Finalize()
    if (nerr > 0) then
      print '(A,I0,A,I0,A)', 'rank ', rank, ': ', nerr, ' errors'
      stop 1
    end if
    stop
  end subroutine finish
end program dyn_spawn_f08
