//! Handle conversion between C and Fortran. In the MPICH ABI a Fortran
//! handle is the C handle's integer value; statuses are five integers.

use super::*;

macro_rules! same_value {
    ($($c2f:ident, $f2c:ident, $t:ty;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $c2f(h: $t) -> MPI_Fint { h as MPI_Fint }
        #[no_mangle]
        pub unsafe extern "C" fn $f2c(h: MPI_Fint) -> $t { h as $t }
    )*};
}

same_value! {
    PMPI_Comm_c2f, PMPI_Comm_f2c, MPI_Comm;
    PMPI_Win_c2f, PMPI_Win_f2c, MPI_Win;
    PMPI_Errhandler_c2f, PMPI_Errhandler_f2c, MPI_Errhandler;
    PMPI_Group_c2f, PMPI_Group_f2c, MPI_Group;
    PMPI_Info_c2f, PMPI_Info_f2c, MPI_Info;
    PMPI_Message_c2f, PMPI_Message_f2c, MPI_Message;
    PMPI_Request_c2f, PMPI_Request_f2c, MPI_Request;
    PMPI_Type_c2f, PMPI_Type_f2c, MPI_Datatype;
    PMPI_Op_c2f, PMPI_Op_f2c, MPI_Op;
    PMPI_Session_c2f, PMPI_Session_f2c, MPI_Session;
}

unsafe fn copy5(src: *const c_int, dst: *mut c_int) -> c_int {
    if src.is_null() || dst.is_null() {
        return MPI_ERR_ARG;
    }
    std::ptr::copy_nonoverlapping(src, dst, 5);
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_c2f(c_status: *const MPI_Status, f_status: *mut MPI_Fint) -> c_int {
    copy5(c_status as *const c_int, f_status)
}
#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_f2c(f_status: *const MPI_Fint, c_status: *mut MPI_Status) -> c_int {
    copy5(f_status, c_status as *mut c_int)
}
#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_c2f08(c_status: *const MPI_Status, f08_status: *mut MPI_F08_status) -> c_int {
    copy5(c_status as *const c_int, f08_status as *mut c_int)
}
#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_f082c(f08_status: *const MPI_F08_status, c_status: *mut MPI_Status) -> c_int {
    copy5(f08_status as *const c_int, c_status as *mut c_int)
}
#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_f082f(f08_status: *const MPI_F08_status, f_status: *mut MPI_Fint) -> c_int {
    copy5(f08_status as *const c_int, f_status)
}
#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_f2f08(f_status: *const MPI_Fint, f08_status: *mut MPI_F08_status) -> c_int {
    copy5(f_status, f08_status as *mut c_int)
}
