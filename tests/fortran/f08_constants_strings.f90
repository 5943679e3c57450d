! gridmpi-test: ranks=1
! The mpi_f08 module gives the INTEGER indices MPI_SOURCE, MPI_TAG and
! MPI_ERROR of a status array (for MPI_Status_f082f's INTEGER status; the
! module left them out, so under IMPLICIT NONE this did not compile, and
! without it they were unset locals: MPICH's f08/misc/statusconvf08 wrote
! out of bounds), and takes the datarep of MPI_Unpack_external as one
! string (it was declared an array of strings: no specific subroutine
! matched 'external32'; MPICH's f08/datatype/packef08).
program f08_constants_strings
  use mpi_f08
  implicit none
  integer :: f_status(MPI_STATUS_SIZE), inbuf(4), outbuf(4)
  type(MPI_Status) :: s
  character :: packed(64)
  integer(kind=MPI_ADDRESS_KIND) :: pos, psize
  call MPI_Init()
  if (MPI_SOURCE < 1 .or. MPI_TAG < 1 .or. MPI_ERROR < 1 .or. MPI_SOURCE > MPI_STATUS_SIZE .or. &
      MPI_TAG > MPI_STATUS_SIZE .or. MPI_ERROR > MPI_STATUS_SIZE) then
    print *, 'FAILED: status indices out of range', MPI_SOURCE, MPI_TAG, MPI_ERROR
    stop 1
  end if
  s%MPI_SOURCE = 11; s%MPI_TAG = 12; s%MPI_ERROR = MPI_ERR_TAG
  call MPI_Status_f082f(s, f_status)
  if (f_status(MPI_SOURCE) /= 11 .or. f_status(MPI_TAG) /= 12 .or. f_status(MPI_ERROR) /= MPI_ERR_TAG) then
    print *, 'FAILED: MPI_Status_f082f', f_status
    stop 1
  end if
  inbuf = (/ 1, -2, 300000, 4 /)
  call MPI_Pack_external_size('external32', 4, MPI_INTEGER, psize)
  if (psize /= 16) then
    print *, 'FAILED: external32 size of 4 INTEGERs', psize
    stop 1
  end if
  pos = 0
  call MPI_Pack_external('external32', inbuf, 4, MPI_INTEGER, packed, psize, pos)
  ! external32 is big-endian: 300000 = 0x000493E0
  if (ichar(packed(9)) /= 0 .or. ichar(packed(10)) /= 4 .or. ichar(packed(11)) /= 147 .or. ichar(packed(12)) /= 224) then
    print *, 'FAILED: external32 bytes', (ichar(packed(pos)), pos = 9, 12)
    stop 1
  end if
  pos = 0
  outbuf = 0
  call MPI_Unpack_external('external32', packed, psize, pos, outbuf, 4, MPI_INTEGER)
  if (any(outbuf /= inbuf) .or. pos /= 16) then
    print *, 'FAILED: MPI_Unpack_external', outbuf, pos
    stop 1
  end if
  call MPI_Finalize()
end program
