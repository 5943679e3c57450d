//! GRIDMPI_TCP_PORTS: where a firewall opens only a range of ports, every
//! rank listens inside it, ranks of one host share it, and a range that is
//! used up is an error that names it.

use gridmpi_transport::tcp::Tcp;
use std::net::{Ipv4Addr, TcpListener};

#[test]
fn listeners_stay_inside_the_range_and_share_it() {
    let lo = Ipv4Addr::LOCALHOST;
    // A free range: ask the kernel for a port and use the ten above it.
    let base = TcpListener::bind((lo, 0)).unwrap().local_addr().unwrap().port().min(65000);
    let range = (base, base + 9);
    let held: Vec<Tcp> = (0..4).map(|r| Tcp::with_ports(r, 4, 1, [1; 32], lo, Some(range)).unwrap()).collect();
    let mut ports: Vec<u16> = held.iter().map(|t| t.port()).collect();
    assert!(ports.iter().all(|p| (range.0..=range.1).contains(p)), "ports {ports:?} outside {range:?}");
    ports.sort();
    ports.dedup();
    assert_eq!(ports.len(), 4, "two listeners on one port");
}

#[test]
fn a_used_up_range_is_an_error_naming_it() {
    let lo = Ipv4Addr::LOCALHOST;
    let taken = TcpListener::bind((lo, 0)).unwrap();
    let p = taken.local_addr().unwrap().port();
    let e = Tcp::with_ports(0, 2, 1, [1; 32], lo, Some((p, p))).err().expect("the only port is taken");
    assert!(e.to_string().contains(&format!("{p}-{p}")) && e.to_string().contains("GRIDMPI_TCP_PORTS"), "{e}");
}
