! gridmpi-test: ranks=1
! Attributes between Fortran and C (MPI 4.1, 19.3.7): a value Fortran sets
! (an address-sized integer) reads in C as a pointer to that integer; a pointer C sets reads in Fortran as the
! address itself. The C calls are made from here through BIND(C)
! interfaces to libmpi's C functions. Before, C got the integer itself, so
! C code that dereferenced it (MPICH's f08/attr/fandcattrf08 and
! attrlangf08) crashed.
module c_attr
  use, intrinsic :: iso_c_binding
  implicit none
  interface
    integer(c_int) function c_comm_get_attr(comm, keyval, val, flag) bind(C, name='MPI_Comm_get_attr')
      import :: c_int, c_ptr
      integer(c_int), value :: comm, keyval
      type(c_ptr) :: val
      integer(c_int) :: flag
    end function
    integer(c_int) function c_comm_set_attr(comm, keyval, val) bind(C, name='MPI_Comm_set_attr')
      import :: c_int, c_ptr
      integer(c_int), value :: comm, keyval
      type(c_ptr), value :: val
    end function
    integer(c_int) function c_type_get_attr(dtype, keyval, val, flag) bind(C, name='MPI_Type_get_attr')
      import :: c_int, c_ptr
      integer(c_int), value :: dtype, keyval
      type(c_ptr) :: val
      integer(c_int) :: flag
    end function
  end interface
contains
  ! A Fortran copy callback: the copy is the value plus one.
  subroutine plus_one(oldcomm, keyval, extra, vin, vout, flag, ierr)
    use mpi_f08
    type(MPI_Comm) :: oldcomm
    integer :: keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra, vin, vout
    logical :: flag
    vout = vin + 1
    flag = .true.
    ierr = MPI_SUCCESS
  end subroutine
end module

program attr_interlanguage
  use mpi_f08
  use c_attr
  implicit none
  integer :: kv, kvc, tkv, errs
  integer(c_int) :: flag, rc
  integer(kind=MPI_ADDRESS_KIND) :: val, got
  integer(kind=MPI_ADDRESS_KIND), pointer :: fp
  integer(c_int), target :: cval
  type(c_ptr) :: p, p2
  type(MPI_Comm) :: dup
  type(MPI_Datatype) :: tdup
  logical :: found

  errs = 0
  call MPI_Init()
  call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, kv, 0_MPI_ADDRESS_KIND)

  ! Fortran sets, C reads a pointer to the value; Fortran reads the value.
  val = 5555
  call MPI_Comm_set_attr(MPI_COMM_WORLD, kv, val)
  rc = c_comm_get_attr(MPI_COMM_WORLD%MPI_VAL, kv, p, flag)
  if (rc /= MPI_SUCCESS .or. flag == 0) call fail('C read of a Fortran attribute: not found')
  call c_f_pointer(p, fp)
  if (fp /= 5555) call fail('C read of a Fortran attribute: not a pointer to 5555')
  call MPI_Comm_get_attr(MPI_COMM_WORLD, kv, got, found)
  if (.not. found .or. got /= 5555) call fail('Fortran read of a Fortran attribute')

  ! MPI_COMM_DUP_FN keeps it a Fortran value, in a place of its own.
  call MPI_Comm_dup(MPI_COMM_WORLD, dup)
  rc = c_comm_get_attr(dup%MPI_VAL, kv, p2, flag)
  if (flag == 0) call fail('dup lost the attribute')
  call c_f_pointer(p2, fp)
  if (fp /= 5555 .or. c_associated(p, p2)) call fail('dup: C read is not a pointer to its own 5555')
  call MPI_Comm_free(dup)

  ! A Fortran copy callback gets and gives Fortran values.
  call MPI_Comm_create_keyval(plus_one, MPI_COMM_NULL_DELETE_FN, kvc, 0_MPI_ADDRESS_KIND)
  call MPI_Comm_set_attr(MPI_COMM_WORLD, kvc, 41_MPI_ADDRESS_KIND)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup)
  call MPI_Comm_get_attr(dup, kvc, got, found)
  if (.not. found .or. got /= 42) call fail('Fortran copy callback: the copy is not 42')
  rc = c_comm_get_attr(dup%MPI_VAL, kvc, p, flag)
  call c_f_pointer(p, fp)
  if (flag == 0 .or. fp /= 42) call fail('Fortran copy callback: C read is not a pointer to 42')
  call MPI_Comm_free(dup)

  ! C sets a pointer; Fortran reads the address, C the pointer.
  cval = 77
  rc = c_comm_set_attr(MPI_COMM_WORLD%MPI_VAL, kv, c_loc(cval))
  call MPI_Comm_get_attr(MPI_COMM_WORLD, kv, got, found)
  if (.not. found .or. got /= transfer(c_loc(cval), got)) call fail('Fortran read of a C attribute is not its address')
  rc = c_comm_get_attr(MPI_COMM_WORLD%MPI_VAL, kv, p, flag)
  if (.not. c_associated(p, c_loc(cval))) call fail('C read of a C attribute')

  ! Datatypes alike.
  call MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, tkv, 0_MPI_ADDRESS_KIND)
  call MPI_Type_dup(MPI_INTEGER, tdup)
  call MPI_Type_set_attr(tdup, tkv, 9_MPI_ADDRESS_KIND)
  rc = c_type_get_attr(tdup%MPI_VAL, tkv, p, flag)
  call c_f_pointer(p, fp)
  if (flag == 0 .or. fp /= 9) call fail('C read of a Fortran datatype attribute')
  call MPI_Type_free(tdup)

  call MPI_Comm_delete_attr(MPI_COMM_WORLD, kv)
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, kvc)
  call MPI_Comm_free_keyval(kv)
  call MPI_Comm_free_keyval(kvc)
  call MPI_Type_free_keyval(tkv)
  call MPI_Finalize()
  if (errs > 0) stop 1
contains
  subroutine fail(msg)
    character(len=*) :: msg
    print *, 'FAILED: ', msg
    errs = errs + 1
  end subroutine
end program
