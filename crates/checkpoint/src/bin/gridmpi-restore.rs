//! gridmpi-restore IMAGE: rebuild the process an image holds, in this
//! process, and let it continue. Returns (exit status 2) only if the
//! image cannot be restored here; the reason is printed.
//! gridmpi-restore --info IMAGE: check and describe it (status 0
//! restorable here, 1 not, 2 damaged or unreadable).

use std::os::unix::process::CommandExt;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // glibc registers an rseq area in our TLS, which the restore unmaps;
    // the kernel would then write into nothing and kill us. Run again
    // with glibc's rseq registration off (if that fails, the restore
    // unregisters it itself, which needs the length glibc used).
    if std::env::var_os("GRIDMPI_RESTORE_NO_RSEQ").is_none() {
        let mut t = std::env::var("GLIBC_TUNABLES").unwrap_or_default();
        if !t.is_empty() {
            t.push(':');
        }
        t.push_str("glibc.pthread.rseq=0");
        let _ = std::process::Command::new("/proc/self/exe")
            .arg0(&args[0])
            .args(&args[1..])
            .env("GLIBC_TUNABLES", t)
            .env("GRIDMPI_RESTORE_NO_RSEQ", "1")
            .exec();
    }
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
