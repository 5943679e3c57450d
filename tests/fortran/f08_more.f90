! gridmpi-test: ranks=1,2,4 timeout=90
! More of the mpi_f08 module: LOGICAL arrays (MPI_Cart_create, MPI_Cart_get,
! MPI_Cart_sub), strings in and out (names, MPI_Error_string,
! MPI_Get_processor_name), 1-based indices (MPI_Waitany, MPI_Testsome),
! MPI_Type_create_struct, MPI_Alloc_mem into a TYPE(C_PTR), a window with
! MPI_Put and fences, datatype attributes with MPI_TYPE_DUP_FN, persistent
! requests, MPI_Comm_split_type, MPI_Info_get_nthkey, MPI_Buffer_detach.
! Built with MPICH 4.0.2's mpi_f08 this fails 'waitany index is 1-based':
! its MPI_Waitany returns a 0-based index there (in Fortran MPI indices
! are 1-based), and its interface of MPI_Buffer_detach makes
! gfortran 12 fail (internal compiler error); everything else passes.
program f08_more
  use mpi_f08
  use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer, c_associated, c_loc
  implicit none
  integer :: rank, nprocs, errors, n, i, idx, outcount, keyval, indices(4), ndims
  integer :: dims(2), coords(2), buf(8), blens(2)
  integer(kind=MPI_ADDRESS_KIND) :: displs(2), attr, winsize, base, addr
  logical :: periods(2), remain(2), flag
  character(len=MPI_MAX_OBJECT_NAME) :: name
  character(len=MPI_MAX_ERROR_STRING) :: estr
  character(len=MPI_MAX_PROCESSOR_NAME) :: host
  character(len=MPI_MAX_INFO_KEY) :: key
  type(MPI_Comm) :: cart, sub, node
  type(MPI_Datatype) :: types(2), stype, dup
  type(MPI_Request) :: reqs(4), preq
  type(MPI_Status) :: statuses(4), status
  type(MPI_Win) :: win
  type(MPI_Info) :: info
  type(c_ptr) :: mem, detached
  character, allocatable, target :: bsendbuf(:)
  integer, pointer :: ints(:)
  type :: pair
    sequence
    integer :: a
    double precision :: b
  end type
  type(pair) :: pairs(2)

  errors = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)

  ! Cartesian topology: LOGICAL arrays both ways.
  dims = 0
  call MPI_Dims_create(nprocs, 2, dims)
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, [.true., .false.], .false., cart)
  call MPI_Cartdim_get(cart, ndims)
  call MPI_Cart_get(cart, 2, dims, periods, coords)
  call check(ndims == 2 .and. periods(1) .and. .not. periods(2) .and. product(dims) == nprocs, 'cart_get')
  remain = [.false., .true.]
  call MPI_Cart_sub(cart, remain, sub)
  call MPI_Comm_size(sub, n)
  call check(n == dims(2), 'cart_sub')
  call MPI_Comm_free(sub)

  ! Names and strings.
  call MPI_Comm_set_name(cart, 'the grid  ')
  call MPI_Comm_get_name(cart, name, n)
  call check(name == 'the grid' .and. n == 8, 'comm name')
  call MPI_Comm_free(cart)
  call MPI_Error_string(MPI_ERR_TRUNCATE, estr, n)
  call check(n > 0 .and. n == len_trim(estr), 'error string')
  call MPI_Get_processor_name(host, n)
  call check(n > 0 .and. n == len_trim(host), 'processor name')
  call MPI_Info_create(info)
  call MPI_Info_set(info, 'k1', 'v1')
  call MPI_Info_get_nthkey(info, 0, key)
  call check(key == 'k1', 'info nthkey')
  call MPI_Info_free(info)

  ! 1-based indices.
  buf = rank
  call MPI_Irecv(buf(1), 1, MPI_INTEGER, MPI_PROC_NULL, 0, MPI_COMM_WORLD, reqs(1))
  call MPI_Irecv(buf(2), 1, MPI_INTEGER, 0, 3, MPI_COMM_SELF, reqs(2))
  reqs(3) = MPI_REQUEST_NULL
  call MPI_Isend(buf(3), 1, MPI_INTEGER, 0, 3, MPI_COMM_SELF, reqs(4))
  call MPI_Waitany(4, reqs, idx, status)
  call check(idx >= 1 .and. idx <= 4 .and. idx /= 3, 'waitany index is 1-based')
  outcount = 0
  n = 1
  do while (n < 3)
    call MPI_Testsome(4, reqs, outcount, indices, statuses)
    if (outcount /= MPI_UNDEFINED) then
      n = n + outcount
      if (outcount > 0) call check(all(indices(1:outcount) >= 1 .and. indices(1:outcount) <= 4), 'testsome indices')
    else
      exit
    end if
  end do
  call check(n == 3, 'testsome completed the rest')

  ! Persistent requests.
  call MPI_Send_init(buf, 2, MPI_INTEGER, 0, 4, MPI_COMM_SELF, preq)
  call MPI_Start(preq)
  call MPI_Recv(buf(5), 2, MPI_INTEGER, 0, 4, MPI_COMM_SELF, status)
  call MPI_Wait(preq, status)
  call MPI_Request_free(preq)
  call check(preq == MPI_REQUEST_NULL .and. all(buf(5:6) == buf(1:2)), 'persistent send')

  ! A struct type from addresses.
  call MPI_Get_address(pairs(1)%a, base)
  call MPI_Get_address(pairs(1)%b, addr)
  displs = [0_MPI_ADDRESS_KIND, MPI_Aint_diff(addr, base)]
  blens = 1
  types = [MPI_INTEGER, MPI_DOUBLE_PRECISION]
  call MPI_Type_create_struct(2, blens, displs, types, stype)
  call MPI_Get_address(pairs(2)%a, addr)
  call MPI_Type_create_resized(stype, 0_MPI_ADDRESS_KIND, MPI_Aint_diff(addr, base), dup)
  call MPI_Type_free(stype)
  stype = dup
  call MPI_Type_commit(stype)
  pairs(1) = pair(rank, 0.5d0)
  pairs(2) = pair(-1, -1d0)
  call MPI_Sendrecv(pairs(1), 1, stype, 0, 6, pairs(2), 1, stype, 0, 6, MPI_COMM_SELF, status)
  call check(pairs(2)%a == rank .and. pairs(2)%b == 0.5d0, 'struct type')

  ! Datatype attributes copied by MPI_TYPE_DUP_FN.
  call MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, keyval, 0_MPI_ADDRESS_KIND)
  call MPI_Type_set_attr(stype, keyval, 99_MPI_ADDRESS_KIND)
  call MPI_Type_dup(stype, dup)
  call MPI_Type_get_attr(dup, keyval, attr, flag)
  call check(flag .and. attr == 99, 'type attribute copied')
  call MPI_Type_free(dup)
  call MPI_Type_free(stype)
  call MPI_Type_free_keyval(keyval)

  ! Memory from MPI into a C pointer, exposed in a window.
  call MPI_Alloc_mem(int(8 * 4, MPI_ADDRESS_KIND), MPI_INFO_NULL, mem)
  call check(c_associated(mem), 'alloc_mem')
  call c_f_pointer(mem, ints, [8])
  ints = -1
  winsize = 8 * 4
  call MPI_Win_create(ints, winsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win)
  call MPI_Win_fence(0, win)
  n = rank
  call MPI_Put(n, 1, MPI_INTEGER, mod(rank + 1, nprocs), int(rank, MPI_ADDRESS_KIND), 1, MPI_INTEGER, win)
  call MPI_Win_fence(0, win)
  call check(ints(mod(rank - 1 + nprocs, nprocs) + 1) == mod(rank - 1 + nprocs, nprocs), 'put through a window')
  call MPI_Win_free(win)
  call check(win == MPI_WIN_NULL, 'window freed')
  call MPI_Free_mem(ints)

  ! A buffer for buffered sends: detach returns its address as a TYPE(C_PTR).
  allocate(bsendbuf(4096))
  call MPI_Buffer_attach(bsendbuf, size(bsendbuf))
  call MPI_Buffer_detach(detached, n)
  call check(n == size(bsendbuf) .and. c_associated(detached, c_loc(bsendbuf)), 'buffer_detach address')
  deallocate(bsendbuf)

  ! Shared-memory communicator.
  call MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, node)
  call MPI_Comm_size(node, n)
  call check(n >= 1 .and. n <= nprocs, 'split_type shared')
  call MPI_Comm_free(node)

  call MPI_Finalize()
  if (errors /= 0) stop 1
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      print *, 'rank', rank, 'FAILED: ', what
      errors = errors + 1
    end if
  end subroutine
end program
