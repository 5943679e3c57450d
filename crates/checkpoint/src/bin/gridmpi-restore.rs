//! gridmpi-restore IMAGE: rebuild the process an image holds, in this
//! process, and let it continue. Returns (exit status 2) only if the
//! image cannot be restored here; the reason is printed.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 2 || args[1].starts_with('-') {
        eprintln!("usage: gridmpi-restore IMAGE\n  (GRIDMPI_RESTORE_VERBOSE=1: say what is restored; GRIDMPI_RESTORE_OTHER_KERNEL=1: accept an image of another kernel release)");
        std::process::exit(2);
    }
    match gridmpi_checkpoint::restore::restore(&args[1]) {
        Ok(never) => match never {},
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
}
