# GridMPI: `make` builds everything into build/, `make test` runs every test,
# `make demo` runs the main demo. See README.md.

# cargo from PATH, else where rustup puts it (.ci/install-deps.sh run with sudo)
CARGO    ?= $(shell command -v cargo 2>/dev/null || echo $(HOME)/.cargo/bin/cargo)
BUILD    := build
RELEASE  := target/release
PACKAGES := -p gridmpi -p gridmpi-mpiabi -p gridmpi-launcher -p gridmpi-abi -p gridmpi-testbed -p gridmpi-fortran -p gridmpi-trace -p gridmpi-checkpoint
# Fortran compiler for the mpi module (not FC: make's built-in FC is f77)
MPIFC    ?= gfortran
# For the pkg-config files: our version, and the MPICH version whose ABI we provide
VERSION       := $(shell sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -n 1)
MPICH_VERSION := $(shell sed -n 's/^\#define MPICH_VERSION "\(.*\)"/\1/p' abi/mpi.h.in)

.PHONY: all build test test-unit test-c test-abi test-fortran test-hostile test-rendezvous test-mpi4py test-hdf5 test-compat test-testbed test-trace test-checkpoint test-spawn-launcher test-dynamic fuzz-smoke fuzz demo bench clean

all: build

build:
	$(CARGO) build --release $(PACKAGES)
	@mkdir -p $(BUILD)/lib $(BUILD)/bin $(BUILD)/include
	$(RELEASE)/gridmpi-abigen . $(BUILD)/include
	@# install (not cp): a running program may have the old library mapped
	install -m 755 $(RELEASE)/libmpi.so $(BUILD)/lib/libmpi.so.12
	ln -sf libmpi.so.12 $(BUILD)/lib/libmpi.so
	ln -sf libmpi.so.12 $(BUILD)/lib/libmpich.so.12
	ln -sf libmpi.so.12 $(BUILD)/lib/libmpich.so
	@# The MPI-5 standard ABI: translates to libmpi.so.12, which it loads from beside itself
	install -m 755 $(RELEASE)/libmpi_abi.so $(BUILD)/lib/libmpi_abi.so.1
	ln -sf libmpi_abi.so.1 $(BUILD)/lib/libmpi_abi.so
	install -m 755 $(RELEASE)/libmpifort.so $(BUILD)/lib/libmpifort.so.12
	ln -sf libmpifort.so.12 $(BUILD)/lib/libmpifort.so
	ln -sf libmpifort.so.12 $(BUILD)/lib/libmpichfort.so.12
	ln -sf libmpifort.so.12 $(BUILD)/lib/libmpichfort.so
	install -m 755 $(RELEASE)/gridmpirun $(BUILD)/bin/gridmpirun
	ln -sf gridmpirun $(BUILD)/bin/mpiexec
	ln -sf gridmpirun $(BUILD)/bin/mpirun
	install -m 755 $(RELEASE)/gridmpi-checkpoint $(BUILD)/bin/gridmpi-checkpoint
	install -m 755 crates/launcher/scripts/mpicc crates/launcher/scripts/mpicxx $(BUILD)/bin/
	@# mpi.pc, gridmpi.pc, mpich.pc: pkg-config finds us (PKG_CONFIG_PATH=build/lib/pkgconfig)
	sh crates/launcher/pkgconfig/write-pc.sh $(BUILD) $(VERSION) $(MPICH_VERSION)
	install -m 755 crates/launcher/scripts/mpicc_abi crates/launcher/scripts/mpicxx_abi $(BUILD)/bin/
	install -m 755 crates/fortran/scripts/mpifort $(BUILD)/bin/
	ln -sf mpifort $(BUILD)/bin/mpif90
	ln -sf mpifort $(BUILD)/bin/mpif77
	@# The mpi module is declarations only; mpi_f08's procedures go to
	@# libgridmpi_f08.so.12 (the compiler's runtime is its dependency, not libmpifort's);
	@# it finds libmpifort beside itself ($$ORIGIN): a program's runpath is not searched for a library's dependencies.
	@# A compiler without TYPE(*), DIMENSION(..) (gfortran before 10) still gets the mpi module.
	@if command -v $(MPIFC) >/dev/null 2>&1; then \
	    $(MPIFC) -c $(BUILD)/include/mpi.f90 -J $(BUILD)/include -o $(BUILD)/include/mpi.o && rm -f $(BUILD)/include/mpi.o || exit 1; \
	    if $(MPIFC) -c -fPIC -O1 $(BUILD)/include/mpi_f08.f90 -J $(BUILD)/include -o $(BUILD)/include/mpi_f08.o && \
	        $(MPIFC) -shared -Wl,-soname,libgridmpi_f08.so.12 -o $(BUILD)/include/libgridmpi_f08.so $(BUILD)/include/mpi_f08.o \
	            -L$(BUILD)/lib -Wl,-rpath,'$$ORIGIN' -lmpifort -lmpi; then \
	        install -m 755 $(BUILD)/include/libgridmpi_f08.so $(BUILD)/lib/libgridmpi_f08.so.12 && \
	        ln -sf libgridmpi_f08.so.12 $(BUILD)/lib/libgridmpi_f08.so; \
	    else echo "$(MPIFC) cannot build the mpi_f08 module (gfortran 10 or later can): not installed"; \
	        rm -f $(BUILD)/include/mpi_f08.mod $(BUILD)/lib/libgridmpi_f08.so $(BUILD)/lib/libgridmpi_f08.so.12; fi; \
	    rm -f $(BUILD)/include/mpi_f08.o $(BUILD)/include/libgridmpi_f08.so; \
	else echo "no Fortran compiler ($(MPIFC)): the mpi and mpi_f08 modules are not built"; fi
	install -m 755 $(RELEASE)/gridmpi-trace $(BUILD)/bin/gridmpi-trace
	@# the process checkpointer (docs/checkpoint.md)
	install -m 755 $(RELEASE)/gridmpi-restore $(BUILD)/bin/gridmpi-restore
	install -m 755 $(RELEASE)/libgridmpi_checkpoint.so $(BUILD)/lib/libgridmpi_checkpoint.so
	install -m 644 crates/checkpoint/include/gridmpi_checkpoint.h $(BUILD)/include/
	install -m 755 $(RELEASE)/gridmpi-testbed $(BUILD)/bin/gridmpi-testbed
	ln -sf gridmpi-testbed $(BUILD)/bin/gridmpi-testbed-ssh

test: build test-unit fuzz-smoke test-c test-abi test-fortran test-compat test-hostile test-rendezvous test-dynamic test-spawn-launcher test-mpi4py test-hdf5 test-testbed test-trace test-checkpoint

# gridmpirun's side of MPI_Comm_spawn (tests/spawn/README.md).
test-spawn-launcher: build
	python3 tests/spawn/launcher.py

# Separately started jobs joined by ports and MPI_Comm_join (spawning is in test-c).
test-dynamic: build
	bash tests/dynamic/run.sh

test-unit:
	$(CARGO) test --release --workspace

# Fuzzing (fuzz/README.md): every target over a few hundred thousand
# mutated valid inputs on stable Rust (part of test), and long libFuzzer
# runs, one target after the other (nightly and cargo-fuzz).
FUZZ_TARGETS := wire_header handshake pmi launcher_link
FUZZ_RUNS    ?= 10000000
# The fuzzed code is safe Rust: AddressSanitizer only slows it (FUZZ_FLAGS= to have it)
FUZZ_FLAGS   ?= --sanitizer none

fuzz-smoke:
	$(CARGO) test --release --manifest-path fuzz/Cargo.toml -p gridmpi-fuzz-smoke
	$(CARGO) run --release --manifest-path fuzz/Cargo.toml -p gridmpi-fuzz-smoke

fuzz:
	$(CARGO) run --release --manifest-path fuzz/Cargo.toml -p gridmpi-fuzz-smoke -- --write-seeds fuzz/corpus
	for t in $(FUZZ_TARGETS); do $(CARGO) +nightly fuzz run $(FUZZ_FLAGS) $$t -- -runs=$(FUZZ_RUNS) || exit 1; done

test-c: build
	python3 tests/run.py

# The MPI-5 standard ABI: programs built with our mpicc_abi and MPICH 5's, run on libmpi_abi.so.1.
test-abi: build
	bash tests/abi/run.sh

test-fortran: build
	python3 tests/fortran/run.py

test-hostile: build
	python3 tests/hostile/run.py

# Jobs formed at a rendezvous from separately started groups, and relays (docs/grid.md).
test-rendezvous: build
	python3 tests/rendezvous/run.py

# mpi4py's own suite (the wheel in /opt/mpi4py) and Debian's parallel HDF5.
test-mpi4py: build
	MPI4PY_TESTS=all bash tests/mpi4py/run.sh

test-hdf5: build
	bash tests/hdf5/run.sh

test-compat: build
	bash tests/compat/run.sh

# Need root (network namespaces); they say what is missing otherwise.
test-testbed: build
	bash tests/testbed/run.sh

test-trace: build
	bash tests/trace/run.sh

# Checkpoint/restart of C programs (docs/checkpoint.md), about 4 s.
# REPEAT=N runs the set N times (it passed REPEAT=20, 340 of 340 checks, before joining test).
# Then MPI jobs checkpointed through gridmpirun, killed and restarted (ROUNDS=N).
test-checkpoint: build
	$(CARGO) build --release -p gridmpi-checkpoint --lib --bins --examples
	bash tests/checkpoint/run.sh
	bash tests/checkpoint/mpi.sh

demo: build
	bash demo/run.sh

clean:
	rm -rf $(BUILD)
	$(CARGO) clean
