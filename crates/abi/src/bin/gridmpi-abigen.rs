//! `gridmpi-abigen ROOT OUT_INCLUDE_DIR`: writes mpi.h, mpif.h and the
//! `mpi` and `mpi_f08` module sources (mpi.f90, mpi_f08.f90) from ROOT/abi,
//! and the standard ABI's mpi_abi.h (also as abi/mpi.h).

use std::path::{Path, PathBuf};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: gridmpi-abigen REPO_ROOT OUTPUT_INCLUDE_DIR");
        std::process::exit(2);
    }
    let root = PathBuf::from(&args[1]);
    let out = PathBuf::from(&args[2]);
    let read = |p: PathBuf| {
        std::fs::read_to_string(&p).unwrap_or_else(|e| {
            eprintln!("gridmpi-abigen: cannot read {}: {e}", p.display());
            std::process::exit(1)
        })
    };
    let fail = |e: String| -> ! {
        eprintln!("gridmpi-abigen: {e}");
        std::process::exit(1)
    };
    let table = read(root.join("abi/functions.txt"));
    let template = read(root.join("abi/mpi.h.in"));
    let ftable = read(root.join("abi/fortran.txt"));
    let funcs = gridmpi_abi::parse_table(&table).unwrap_or_else(|e| fail(e.to_string()));
    let ft = gridmpi_abi::fortran::parse_fortran_table(&ftable).unwrap_or_else(|e| fail(e.to_string()));
    std::fs::create_dir_all(&out).expect("create include dir");
    let version = env!("CARGO_PKG_VERSION");
    write_if_changed(&out.join("mpi.h"), &gridmpi_abi::render_header(&template, &funcs, version));
    let mpif = gridmpi_abi::fortran::render_mpif_h(&template, &funcs, &ft, version).unwrap_or_else(|e| fail(e));
    write_if_changed(&out.join("mpif.h"), &mpif);
    let module = gridmpi_abi::fortran::render_mpi_module(&template, &funcs, &ft, version).unwrap_or_else(|e| fail(e));
    write_if_changed(&out.join("mpi.f90"), &module);
    // The MPI-5 standard ABI's header, as mpi_abi.h and as abi/mpi.h (what
    // mpicc_abi puts first on the include path, for `#include <mpi.h>`).
    let abi_table = gridmpi_abi::abi5::parse_abi_table(&read(root.join("abi/abi5.txt"))).unwrap_or_else(|e| fail(e));
    let abi_h = gridmpi_abi::abi5::render_abi_header(&read(root.join("abi/mpi_abi.h.in")), &abi_table, &funcs, version);
    write_if_changed(&out.join("mpi_abi.h"), &abi_h);
    std::fs::create_dir_all(out.join("abi")).expect("create include/abi");
    write_if_changed(&out.join("abi/mpi.h"), &abi_h);
    let f08 = gridmpi_abi::fortran08::render_mpi_f08_module(&template, &funcs, &ft, version).unwrap_or_else(|e| fail(e));
    write_if_changed(&out.join("mpi_f08.f90"), &f08);
}

/// Only rewrite when changed, so dependent builds are not redone.
fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap_or_else(|e| {
            eprintln!("gridmpi-abigen: cannot write {}: {e}", path.display());
            std::process::exit(1)
        });
    }
}
