//! `gridmpi-abigen ROOT OUT_INCLUDE_DIR`: writes mpi.h from ROOT/abi.

use std::path::PathBuf;

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
    let table = read(root.join("abi/functions.txt"));
    let template = read(root.join("abi/mpi.h.in"));
    let funcs = gridmpi_abi::parse_table(&table).unwrap_or_else(|e| {
        eprintln!("gridmpi-abigen: {e}");
        std::process::exit(1)
    });
    std::fs::create_dir_all(&out).expect("create include dir");
    let header = gridmpi_abi::render_header(&template, &funcs, env!("CARGO_PKG_VERSION"));
    let path = out.join("mpi.h");
    // Only rewrite when changed, so dependent builds are not redone.
    if std::fs::read_to_string(&path).ok().as_deref() != Some(header.as_str()) {
        std::fs::write(&path, header).expect("write mpi.h");
    }
}
