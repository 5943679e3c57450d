//! Generates the MPI_X -> PMPI_X entry points and the mpi.h constants from
//! abi/ (see crates/abi), and gives the library its soname.

use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../..");
    let table_path = root.join("abi/functions.txt");
    let template_path = root.join("abi/mpi.h.in");
    println!("cargo:rerun-if-changed={}", table_path.display());
    println!("cargo:rerun-if-changed={}", template_path.display());
    let table = std::fs::read_to_string(&table_path).expect("read abi/functions.txt");
    let template = std::fs::read_to_string(&template_path).expect("read abi/mpi.h.in");
    let funcs = gridmpi_abi::parse_table(&table).unwrap_or_else(|e| panic!("{e}"));
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let entry = gridmpi_abi::rust_entry_points(&funcs).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(out.join("entry_points.rs"), entry).unwrap();
    let shell = gridmpi_abi::shell::rust_shell(&funcs).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(out.join("shell.rs"), shell).unwrap();
    std::fs::write(out.join("consts.rs"), gridmpi_abi::rust_constants(&template)).unwrap();
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi.so.12");
}
