//! gridmpi-restore IMAGE: rebuild the process an image holds, in this
//! process, and let it continue. Returns (exit status 2) only if the
//! image cannot be restored here; the reason is printed.
//! gridmpi-restore --info IMAGE: check and describe it (status 0
//! restorable here, 1 not, 2 damaged or unreadable).

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "--info" {
        match gridmpi_checkpoint::restore::info(&args[2]) {
            Ok(s) => {
                println!("{s}");
                std::process::exit(if s.contains("NOT restorable") { 1 } else { 0 });
            }
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2);
            }
        }
    }
    if args.len() != 2 || args[1].starts_with('-') {
        eprintln!("usage: gridmpi-restore IMAGE        restore it: the program continues in this process\n       gridmpi-restore --info IMAGE  check it (as a restore would) and describe it\n  (GRIDMPI_RESTORE_VERBOSE=1: say what is restored; GRIDMPI_RESTORE_OTHER_KERNEL=1: accept an image of another kernel release)");
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
