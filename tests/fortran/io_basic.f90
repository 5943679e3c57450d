! gridmpi-test: ranks=1,2 mpich-abi=yes
! MPI-IO from Fortran: a file handle is an INTEGER (MPI_File_c2f's value).
! Every rank writes its block at an explicit offset of a shared file and
! reads the neighbour's back; get_size; the default file error handler
! returns errors (a missing file: MPI_ERR_NO_SUCH_FILE); DELETE_ON_CLOSE.
program io_basic
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, nerr, fh, fh2, cls, i, other, cnt
  integer :: status(MPI_STATUS_SIZE)
  integer :: wbuf(4), rbuf(4)
  integer(kind=MPI_OFFSET_KIND) :: off, fsize
  character(len=64) :: fname

  nerr = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  ! A name of this run's own (from rank 0's clock), shared by all ranks.
  if (rank == 0) cnt = int(mod(MPI_Wtime() * 1000.0d0, 1.0d6))
  call MPI_Bcast(cnt, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  write (fname, '(A,I0)') '/tmp/gridmpi-fio-', cnt

  call MPI_File_open(MPI_COMM_WORLD, trim(fname), &
       MPI_MODE_CREATE + MPI_MODE_RDWR + MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, fh, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_File_open')
  call check(fh /= MPI_FILE_NULL, 'open gave MPI_FILE_NULL')
  wbuf = (/ (rank * 10 + i, i = 1, 4) /)
  off = rank * 16
  call MPI_File_write_at(fh, off, wbuf, 4, MPI_INTEGER, status, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_File_write_at')
  call MPI_Get_count(status, MPI_INTEGER, cnt, ierr)
  call check(cnt == 4, 'write count')
  call MPI_File_sync(fh, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_File_sync(fh, ierr)
  call MPI_File_get_size(fh, fsize, ierr)
  call check(fsize == 16 * nprocs, 'file size')
  other = mod(rank + 1, nprocs)
  off = other * 16
  call MPI_File_read_at(fh, off, rbuf, 4, MPI_INTEGER, status, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_File_read_at')
  do i = 1, 4
    call check(rbuf(i) == other * 10 + i, 'read back')
  end do
  call MPI_File_close(fh, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_File_close')
  call check(fh == MPI_FILE_NULL, 'close did not set MPI_FILE_NULL')

  call MPI_File_open(MPI_COMM_WORLD, trim(fname) // '-missing', MPI_MODE_RDONLY, &
       MPI_INFO_NULL, fh2, ierr)
  call check(ierr /= MPI_SUCCESS, 'opening a missing file succeeded')
  call MPI_Error_class(ierr, cls, ierr)
  call check(cls == MPI_ERR_NO_SUCH_FILE, 'missing file: not MPI_ERR_NO_SUCH_FILE')

  call MPI_Finalize(ierr)
  if (nerr > 0) then
    print *, 'rank', rank, ':', nerr, 'errors'
    call exit(1)
  end if

contains

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (.not. cond) then
      nerr = nerr + 1
      print *, 'rank', rank, ': FAILED: ', what
    end if
  end subroutine check

end program io_basic
