! gridmpi-test: ranks=2 mpich-abi=yes
! Derived datatypes from Fortran: vector, indexed, hvector, subarray,
! resized, a struct of absolute addresses sent from MPI_BOTTOM, the MPI-1
! INTEGER forms (MPI_TYPE_HVECTOR, MPI_TYPE_EXTENT), names, envelopes,
! pack/unpack.
program dtype_derived
  use mpi
  implicit none
  integer :: ierr, rank, nerr, i, j, n, peer
  integer :: a(6, 4), b(6, 4), col, row, idx, sub, hv, hv1, res, st, tsize, nint, nadd, ndt, comb
  integer :: status(MPI_STATUS_SIZE), ext1, blens(3), types(3), position, psize, old_ext
  integer(kind=MPI_ADDRESS_KIND) :: lb, extent, addrs(3), stride
  ! Sent and received through MPI_BOTTOM, out of the compiler's sight.
  integer, volatile :: si
  double precision, volatile :: sd(2)
  character(len=4), volatile :: sc
  character(len=MPI_MAX_OBJECT_NAME) :: tname
  character, allocatable :: packed(:)
  integer :: bl(2), dp(2)

  nerr = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  peer = 1 - rank
  a = reshape((/ (i, i = 1, 24) /), (/ 6, 4 /))

  ! A row of a column-major array: 4 elements with stride 6.
  call MPI_Type_vector(4, 1, 6, MPI_INTEGER, row, ierr)
  call MPI_Type_commit(row, ierr)
  call MPI_Type_size(row, tsize, ierr)
  call check(tsize == 16, 'vector size')
  call MPI_Type_get_extent(row, lb, extent, ierr)
  call check(lb == 0 .and. extent == (3 * 6 + 1) * 4, 'vector extent')
  ! MPI-1 INTEGER forms.
  call MPI_Type_extent(row, ext1, ierr)
  call check(ext1 == (3 * 6 + 1) * 4, 'MPI_TYPE_EXTENT (INTEGER)')
  call MPI_Type_hvector(2, 1, 8, MPI_INTEGER, hv1, ierr)
  call MPI_Type_extent(hv1, ext1, ierr)
  call check(ext1 == 12, 'MPI_TYPE_HVECTOR with an INTEGER stride')
  call MPI_Type_free(hv1, ierr)
  ! Names.
  call MPI_Type_set_name(row, 'matrix row   ', ierr)
  call MPI_Type_get_name(row, tname, n, ierr)
  call check(tname == 'matrix row' .and. n == 10, 'Type_set_name/get_name')
  call MPI_Type_get_name(MPI_DOUBLE_PRECISION, tname, n, ierr)
  call check(tname == 'MPI_DOUBLE_PRECISION', 'name of MPI_DOUBLE_PRECISION: '//trim(tname))
  call MPI_Type_get_envelope(row, nint, nadd, ndt, comb, ierr)
  call check(comb == MPI_COMBINER_VECTOR .and. nint == 3 .and. ndt == 1, 'envelope of a vector')

  ! Rows, an indexed type, hvector and a subarray, sent from rank 0.
  call MPI_Type_contiguous(6, MPI_INTEGER, col, ierr)
  call MPI_Type_commit(col, ierr)
  bl = (/ 2, 1 /); dp = (/ 0, 5 /)
  call MPI_Type_indexed(2, bl, dp, MPI_INTEGER, idx, ierr)
  call MPI_Type_commit(idx, ierr)
  stride = 12
  call MPI_Type_create_hvector(3, 1, stride, MPI_INTEGER, hv, ierr)
  call MPI_Type_commit(hv, ierr)
  call MPI_Type_create_subarray(2, (/ 6, 4 /), (/ 2, 3 /), (/ 1, 1 /), MPI_ORDER_FORTRAN, MPI_INTEGER, sub, ierr)
  call MPI_Type_commit(sub, ierr)
  call MPI_Type_create_resized(MPI_INTEGER, 0_MPI_ADDRESS_KIND, 8_MPI_ADDRESS_KIND, res, ierr)
  call MPI_Type_commit(res, ierr)
  if (rank == 0) then
    call MPI_Send(a(2, 1), 1, row, peer, 1, MPI_COMM_WORLD, ierr)
    call MPI_Send(a(1, 3), 1, col, peer, 2, MPI_COMM_WORLD, ierr)
    call MPI_Send(a, 1, idx, peer, 3, MPI_COMM_WORLD, ierr)
    call MPI_Send(a, 1, hv, peer, 4, MPI_COMM_WORLD, ierr)
    call MPI_Send(a, 1, sub, peer, 5, MPI_COMM_WORLD, ierr)
    call MPI_Send(a, 3, res, peer, 6, MPI_COMM_WORLD, ierr)
  else
    b = 0
    call MPI_Recv(b, 4, MPI_INTEGER, 0, 1, MPI_COMM_WORLD, status, ierr)
    call check(all(b(1:4, 1) == (/ 2, 8, 14, 20 /)), 'vector data')
    call MPI_Recv(b, 6, MPI_INTEGER, 0, 2, MPI_COMM_WORLD, status, ierr)
    call check(all(b(:, 1) == (/ (12 + i, i = 1, 6) /)), 'contiguous data')
    call MPI_Recv(b, 3, MPI_INTEGER, 0, 3, MPI_COMM_WORLD, status, ierr)
    call check(all(b(1:3, 1) == (/ 1, 2, 6 /)), 'indexed data')
    call MPI_Recv(b, 3, MPI_INTEGER, 0, 4, MPI_COMM_WORLD, status, ierr)
    call check(all(b(1:3, 1) == (/ 1, 4, 7 /)), 'hvector data')
    b = 0
    call MPI_Recv(b, 1, sub, 0, 5, MPI_COMM_WORLD, status, ierr)
    call MPI_Get_count(status, sub, n, ierr)
    call check(n == 1, 'Get_count of a subarray')
    call MPI_Get_elements(status, sub, n, ierr)
    call check(n == 6, 'Get_elements of a subarray')
    call check(b(2, 2) == 8 .and. b(3, 4) == 21 .and. b(1, 1) == 0 .and. sum(b) == 8 + 9 + 14 + 15 + 20 + 21, 'subarray data')
    call MPI_Recv(b, 3, MPI_INTEGER, 0, 6, MPI_COMM_WORLD, status, ierr)
    call check(all(b(1:3, 1) == (/ 1, 3, 5 /)), 'resized data')
  end if

  ! A struct of absolute addresses, sent from and received into MPI_BOTTOM.
  si = 42 + rank; sd = (/ 1.5d0, -2.5d0 /) * (rank + 1); sc = 'abcd'
  call MPI_Get_address(si, addrs(1), ierr)
  call MPI_Get_address(sd, addrs(2), ierr)
  call MPI_Get_address(sc, addrs(3), ierr)
  blens = (/ 1, 2, 4 /)
  types = (/ MPI_INTEGER, MPI_DOUBLE_PRECISION, MPI_CHARACTER /)
  call MPI_Type_create_struct(3, blens, addrs, types, st, ierr)
  call MPI_Type_commit(st, ierr)
  if (rank == 0) then
    call MPI_Send(MPI_BOTTOM, 1, st, peer, 7, MPI_COMM_WORLD, ierr)
  else
    si = 0; sd = 0; sc = ' '
    call MPI_Recv(MPI_BOTTOM, 1, st, 0, 7, MPI_COMM_WORLD, status, ierr)
    call check(ierr == MPI_SUCCESS, 'receive into MPI_BOTTOM')
    call check(si == 42 .and. all(sd == (/ 1.5d0, -2.5d0 /)) .and. sc == 'abcd', 'struct from MPI_BOTTOM')
  end if

  ! Pack and unpack.
  call MPI_Pack_size(1, row, MPI_COMM_WORLD, psize, ierr)
  allocate (packed(psize))
  position = 0
  call MPI_Pack(a(1, 1), 1, row, packed, psize, position, MPI_COMM_WORLD, ierr)
  call check(position == 16, 'Pack position')
  b = 0
  position = 0
  call MPI_Unpack(packed, psize, position, b, 4, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(all(b(1:4, 1) == (/ 1, 7, 13, 19 /)), 'Unpack data')

  do j = 1, 1
    call MPI_Type_free(row, ierr)
    call MPI_Type_free(col, ierr)
    call MPI_Type_free(idx, ierr)
    call MPI_Type_free(hv, ierr)
    call MPI_Type_free(sub, ierr)
    call MPI_Type_free(res, ierr)
    call MPI_Type_free(st, ierr)
  end do
  call check(st == MPI_DATATYPE_NULL, 'Type_free')
  old_ext = 0
  call MPI_Finalize(ierr)
  if (nerr /= 0) stop 1

contains

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (.not. cond) then
      nerr = nerr + 1
      print '(a,i0,2a)', 'rank ', rank, ' FAILED: ', what
    end if
  end subroutine
end program
