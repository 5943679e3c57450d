! gridmpi-test: ranks=1,4 mpich-abi=yes
! Process topologies from Fortran: LOGICAL arrays (periods, remain_dims),
! Cart_get / Cart_coords / Cart_shift / Cart_sub, Dims_create, and a
! distributed graph with the MPI_UNWEIGHTED sentinel.
program topo_cart
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, nerr, cart, sub, dims(2), coords(2), src, dst, ndims, topo, g, srank, ssize
  integer :: indeg, outdeg, srcs(1), dsts(1)
  logical :: periods(2), remain(2), rperiods(2), weighted

  nerr = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  dims = 0
  call MPI_Dims_create(nprocs, 2, dims, ierr)
  call check(dims(1) * dims(2) == nprocs .and. dims(1) >= dims(2), 'Dims_create')
  periods = (/ .true., .false. /)
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., cart, ierr)
  call MPI_Topo_test(cart, topo, ierr)
  call check(topo == MPI_CART, 'Topo_test')
  call MPI_Cartdim_get(cart, ndims, ierr)
  call check(ndims == 2, 'Cartdim_get')
  call MPI_Cart_get(cart, 2, dims, rperiods, coords, ierr)
  call check(rperiods(1) .and. .not. rperiods(2), 'Cart_get periods are LOGICAL')
  call MPI_Cart_coords(cart, rank, 2, coords, ierr)
  call check(coords(1) == rank / dims(2) .and. coords(2) == mod(rank, dims(2)), 'Cart_coords (row-major)')
  call MPI_Cart_shift(cart, 0, 1, src, dst, ierr)
  call check(dst == mod(coords(1) + 1, dims(1)) * dims(2) + coords(2), 'Cart_shift along a periodic dimension')
  call MPI_Cart_shift(cart, 1, 1, src, dst, ierr)
  if (coords(2) == dims(2) - 1) call check(dst == MPI_PROC_NULL, 'Cart_shift off a non-periodic edge')
  remain = (/ .false., .true. /)
  call MPI_Cart_sub(cart, remain, sub, ierr)
  call MPI_Comm_size(sub, ssize, ierr)
  call MPI_Comm_rank(sub, srank, ierr)
  call check(ssize == dims(2) .and. srank == coords(2), 'Cart_sub with a LOGICAL remain_dims')
  call MPI_Comm_free(sub, ierr)
  call MPI_Comm_free(cart, ierr)

  ! A ring as a distributed graph, unweighted.
  srcs(1) = mod(rank - 1 + nprocs, nprocs)
  dsts(1) = mod(rank + 1, nprocs)
  call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, srcs, MPI_UNWEIGHTED, 1, dsts, MPI_UNWEIGHTED, &
                                      MPI_INFO_NULL, .false., g, ierr)
  call check(ierr == MPI_SUCCESS, 'Dist_graph_create_adjacent with MPI_UNWEIGHTED')
  call MPI_Dist_graph_neighbors_count(g, indeg, outdeg, weighted, ierr)
  call check(indeg == 1 .and. outdeg == 1 .and. .not. weighted, 'Dist_graph_neighbors_count (weighted is LOGICAL)')
  call MPI_Comm_free(g, ierr)

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
