//! The registry: every GridMPI setting, in one list. Add new knobs here.

use crate::{Kind, Scope, Setting};

pub static SETTINGS: &[Setting] = &[
    // ---- progress and transports -------------------------------------
    Setting {
        name: "GRIDMPI_TRANSPORT",
        kind: Kind::Choice(&["auto", "tcp"]),
        default: "auto",
        scope: Scope::Library,
        help: "auto: shared memory between ranks on one host, TCP otherwise; tcp: TCP for every peer",
    },
    Setting {
        name: "GRIDMPI_SPIN_US",
        kind: Kind::Micros,
        default: "auto",
        scope: Scope::Library,
        help: "how long a blocked call polls before sleeping in the kernel (auto: 50us, 0 when ranks outnumber cores)",
    },
    Setting {
        name: "GRIDMPI_EAGER_LIMIT",
        kind: Kind::Size,
        default: "auto",
        scope: Scope::Library,
        help: "largest message sent eagerly (auto: 16k on shared memory, 64k on TCP)",
    },
    Setting {
        name: "GRIDMPI_EAGER_CREDIT",
        kind: Kind::Size,
        default: "1m",
        scope: Scope::Library,
        help: "bytes of unmatched eager data a receiver accepts from each sender before senders switch to rendezvous",
    },
    Setting {
        name: "GRIDMPI_SHM_RING",
        kind: Kind::Size,
        default: "auto",
        scope: Scope::Library,
        help: "bytes of each shared-memory ring between two ranks on a host (auto: 256k, less with many local ranks)",
    },
    Setting {
        name: "GRIDMPI_SINGLE_COPY",
        kind: Kind::Bool,
        default: "yes",
        scope: Scope::Library,
        help: "move large messages between ranks on one host with one process_vm_readv copy",
    },
    Setting {
        name: "GRIDMPI_TCP_ADDR",
        kind: Kind::Text,
        default: "auto",
        scope: Scope::Library,
        help: "address this rank publishes for TCP (auto: every non-loopback IPv4 address of the host)",
    },
    Setting {
        name: "GRIDMPI_TCP_SNDBUF",
        kind: Kind::Size,
        default: "auto",
        scope: Scope::Library,
        help: "SO_SNDBUF of TCP connections (auto: kernel autotuning)",
    },
    Setting {
        name: "GRIDMPI_TCP_RCVBUF",
        kind: Kind::Size,
        default: "auto",
        scope: Scope::Library,
        help: "SO_RCVBUF of TCP connections (auto: kernel autotuning)",
    },
    Setting {
        name: "GRIDMPI_TCP_CONNECT_TIMEOUT",
        kind: Kind::Micros,
        default: "30s",
        scope: Scope::Library,
        help: "give up connecting to a peer after this long",
    },
    // ---- errors and debugging ------------------------------------------
    Setting {
        name: "GRIDMPI_DEBUG",
        kind: Kind::Text,
        default: "",
        scope: Scope::Library,
        help: "comma-separated debug channels printed to stderr: conn (bootstrap, connections, transports), all",
    },
    // ---- launcher ------------------------------------------------------
    Setting {
        name: "GRIDMPI_LAUNCHER",
        kind: Kind::Text,
        default: "ssh",
        scope: Scope::Launcher,
        help: "launch agent for remote hosts: a command taking HOST then the command to run",
    },
    Setting {
        name: "GRIDMPI_PROXY_COMMAND",
        kind: Kind::Text,
        default: "auto",
        scope: Scope::Launcher,
        help: "command the launch agent runs on a remote host to start gridmpirun's proxy (auto: this gridmpirun's own path)",
    },
    Setting {
        name: "GRIDMPI_HOSTFILE",
        kind: Kind::Text,
        default: "",
        scope: Scope::Launcher,
        help: "hostfile used when neither -hosts nor -f is given",
    },
    Setting {
        name: "GRIDMPI_KILL_GRACE",
        kind: Kind::Micros,
        default: "3s",
        scope: Scope::Launcher,
        help: "when a job is torn down, time between SIGTERM and SIGKILL to its ranks",
    },
    Setting {
        name: "GRIDMPI_PMI_VERSION",
        kind: Kind::Choice(&["auto", "1", "2"]),
        default: "auto",
        scope: Scope::Library,
        help: "PMI protocol the library speaks to the launcher (auto: PMI-2 under srun --mpi=pmi2, else PMI-1)",
    },
    Setting {
        name: "GRIDMPI_PMI_TIMEOUT",
        kind: Kind::Micros,
        default: "0",
        scope: Scope::Library,
        help: "give up waiting for a PMI reply (e.g. a fence) after this long; 0: wait as long as the launcher lives",
    },
];
