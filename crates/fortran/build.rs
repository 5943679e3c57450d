//! Generates the Fortran wrappers and constants from abi/ (see
//! crates/abi/src/fortran.rs), and links libmpifort.so.12 against a
//! generated stand-in for libmpi.so.12.
//!
//! Why a stand-in: libmpifort must record `NEEDED libmpi.so.12` (a program
//! or libmpichfort user that loads only the Fortran library must still get
//! the C library), and every C symbol a wrapper calls should be checked at
//! link time (`-z defs`). Linking against target/release/libmpi.so would
//! make this crate's build depend on the order in which cargo builds
//! unrelated workspace members; a stub built from the same table has
//! exactly the symbols the real library exports for the table, and is never
//! loaded (the dynamic linker finds the real libmpi.so.12 at run time).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../..");
    let read = |name: &str| {
        let p = root.join("abi").join(name);
        println!("cargo:rerun-if-changed={}", p.display());
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
    };
    let table = read("functions.txt");
    let template = read("mpi.h.in");
    let ftable = read("fortran.txt");
    let funcs = gridmpi_abi::parse_table(&table).unwrap_or_else(|e| panic!("{e}"));
    let ft = gridmpi_abi::fortran::parse_fortran_table(&ftable).unwrap_or_else(|e| panic!("{e}"));
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let wrappers = gridmpi_abi::fortran::rust_wrappers(&funcs, &ft).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(out.join("wrappers.rs"), wrappers).unwrap();
    std::fs::write(out.join("consts.rs"), gridmpi_abi::rust_constants(&template)).unwrap();

    let stub_dir = out.join("stub");
    std::fs::create_dir_all(&stub_dir).unwrap();
    let stub_c = stub_dir.join("libmpi_stub.c");
    std::fs::write(&stub_c, gridmpi_abi::fortran::link_stub_c(&funcs, &ft).unwrap_or_else(|e| panic!("{e}"))).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O0", "-w", "-Wl,-soname,libmpi.so.12", "-o"])
        .arg(stub_dir.join("libmpi.so"))
        .arg(&stub_c)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {cc:?} for the link stub: {e}"));
    assert!(status.success(), "building the libmpi link stub failed");
    println!("cargo:rerun-if-env-changed=CC");
    println!("cargo:rustc-link-search=native={}", stub_dir.display());
    println!("cargo:rustc-link-lib=dylib=mpi");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpifort.so.12");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,defs");
    // libmpi.so.12 is installed beside libmpifort.so.12: find it there even
    // when the program's own run path does not cover it (a linker with
    // --as-needed drops -lmpi from programs that call only Fortran symbols).
    println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,$ORIGIN");
}
