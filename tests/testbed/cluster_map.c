/* Each rank prints the cluster GridMPI put it in ("gridmpi_cluster" of
 * MPI_COMM_WORLD's info) and rank 0 the whole map, then the ranks of a
 * cluster (GRIDMPI_COMM_TYPE_CLUSTER) and the world run an allreduce, so
 * the cluster-aware algorithms really run across the WAN. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, len, flag;
    char host[MPI_MAX_PROCESSOR_NAME], cluster[MPI_MAX_INFO_VAL], map[MPI_MAX_INFO_VAL];
    MPI_Info info;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Get_processor_name(host, &len);
    MPI_Comm_get_info(MPI_COMM_WORLD, &info);
    MPI_Info_get(info, "gridmpi_cluster", MPI_MAX_INFO_VAL - 1, cluster, &flag);
    if (!flag)
        snprintf(cluster, sizeof cluster, "?");
    MPI_Info_get(info, "gridmpi_cluster_map", MPI_MAX_INFO_VAL - 1, map, &flag);
    MPI_Info_free(&info);

    MPI_Comm site;
    int site_size, sum = 0, one = 1;
    MPI_Comm_split_type(MPI_COMM_WORLD, GRIDMPI_COMM_TYPE_CLUSTER, 0, MPI_INFO_NULL, &site);
    MPI_Comm_size(site, &site_size);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d on %s cluster %s with %d ranks; world sum %d\n", rank, host, cluster, site_size, sum);
    if (rank == 0)
        printf("map: %s\n", flag ? map : "?");
    MPI_Comm_free(&site);
    MPI_Finalize();
    return 0;
}
