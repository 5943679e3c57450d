//! The machine facts an image depends on, and the check that refuses a
//! restore the saved registers or the saved code could not survive.
//!
//! - The XSAVE layout (XCR0, the size CPUID reports for it): the saved
//!   signal frames hold each thread's FPU/vector registers in that layout,
//!   and rt_sigreturn loads them as they are.
//! - The CPU features (CPUID leaves 1 and 7): glibc and the program chose
//!   code paths (AVX-512 memcpy, ...) at start up; those paths are in the
//!   image and would fault where a feature is missing. A superset is fine.
//! - The kernel release: the vDSO and vvar the program has pointers into
//!   come from the kernel; the restorer checks their sizes itself, and
//!   refuses another release unless told (GRIDMPI_RESTORE_OTHER_KERNEL=1).

use crate::image::{Dec, Enc};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Machine {
    /// uname's release and machine, NUL padded
    pub kernel: [u8; 65],
    pub arch: [u8; 65],
    pub xcr0: u64,
    /// CPUID(0xD, 0).EBX: the XSAVE area size for the features XCR0 enables
    pub xsave_size: u32,
    /// CPUID(1).ECX, CPUID(1).EDX, CPUID(7,0).EBX, .ECX, .EDX
    pub features: [u32; 5],
}

/// CPUID(1).ECX bits that say nothing of what code may run: bit 27
/// OSXSAVE follows the kernel, bit 31 "running under a hypervisor".
const LEAF1_ECX_IGNORED: u32 = (1 << 27) | (1 << 31);
const FEATURE_NAMES: [&str; 5] = [
    "CPUID(1).ECX",
    "CPUID(1).EDX",
    "CPUID(7).EBX",
    "CPUID(7).ECX",
    "CPUID(7).EDX",
];

fn cstr(b: &[u8]) -> &str {
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    std::str::from_utf8(&b[..n]).unwrap_or("?")
}

impl Machine {
    /// All zeros: what `current` and `decode` fill in.
    const EMPTY: Machine = Machine { kernel: [0; 65], arch: [0; 65], xcr0: 0, xsave_size: 0, features: [0; 5] };

    /// This machine. Async-signal-safe (uname and CPUID only).
    pub fn current() -> Machine {
        let mut m = Machine::EMPTY;
        // SAFETY: uname fills a utsname we own.
        unsafe {
            let mut u: libc::utsname = std::mem::zeroed();
            if libc::uname(&mut u) == 0 {
                for i in 0..65 {
                    m.kernel[i] = u.release[i] as u8;
                    m.arch[i] = u.machine[i] as u8;
                }
            }
        }
        #[cfg(target_arch = "x86_64")]
        {
            use core::arch::x86_64::__cpuid_count;
            // SAFETY: CPUID exists on every x86_64 CPU (a safe function
            // since Rust 1.87; unsafe before, and rust-version is 1.80).
            #[allow(unused_unsafe)]
            let (l1, l7, maxleaf) = unsafe {
                (
                    __cpuid_count(1, 0),
                    __cpuid_count(7, 0),
                    __cpuid_count(0, 0).eax,
                )
            };
            m.features = [l1.ecx & !LEAF1_ECX_IGNORED, l1.edx, l7.ebx, l7.ecx, l7.edx];
            if l1.ecx & (1 << 27) != 0 && maxleaf >= 0xD {
                // SAFETY: OSXSAVE is set, so XGETBV is allowed.
                m.xcr0 = unsafe { xgetbv0() };
                #[allow(unused_unsafe)]
                let size = unsafe { __cpuid_count(0xD, 0).ebx };
                m.xsave_size = size;
            }
        }
        m
    }

    pub fn kernel_str(&self) -> &str {
        cstr(&self.kernel)
    }

    fn describe(&self) -> String {
        format!(
            "kernel {} with xsave size {} (XCR0 {:#x})",
            self.kernel_str(),
            self.xsave_size,
            self.xcr0
        )
    }

    pub fn encode(&self, e: &mut Enc) {
        e.bytes(&self.kernel);
        e.bytes(&self.arch);
        e.u64(self.xcr0);
        e.u32(self.xsave_size);
        for f in self.features {
            e.u32(f);
        }
    }

    pub fn decode(d: &mut Dec) -> Result<Machine, String> {
        let mut m = Machine::EMPTY;
        m.kernel.copy_from_slice(d.bytes(65)?);
        m.arch.copy_from_slice(d.bytes(65)?);
        m.xcr0 = d.u64()?;
        m.xsave_size = d.u32()?;
        for f in m.features.iter_mut() {
            *f = d.u32()?;
        }
        Ok(m)
    }

    /// Can an image taken on `self` be restored on `here`? The error says
    /// both sides and what differs.
    pub fn check_restorable_on(
        &self,
        here: &Machine,
        path: &str,
        allow_other_kernel: bool,
    ) -> Result<(), String> {
        let head = format!(
            "image {path} was taken on {}, this machine has {}",
            self.describe(),
            here.describe()
        );
        if cstr(&self.arch) != cstr(&here.arch) {
            return Err(format!(
                "{head}: the image is for {}, this machine is {}",
                cstr(&self.arch),
                cstr(&here.arch)
            ));
        }
        if self.xcr0 != here.xcr0 || self.xsave_size != here.xsave_size {
            return Err(format!(
                "{head}: the saved registers (XSAVE layout) would not load here"
            ));
        }
        for ((mine, theirs), name) in self.features.iter().zip(here.features).zip(FEATURE_NAMES) {
            let missing = mine & !theirs;
            if missing != 0 {
                return Err(format!(
                    "{head}: CPU features the program may be using are missing here ({name} bits {missing:#x})"
                ));
            }
        }
        if self.kernel_str() != here.kernel_str() && !allow_other_kernel {
            return Err(format!(
                "{head}: another kernel release (set GRIDMPI_RESTORE_OTHER_KERNEL=1 to try anyway: the vDSO sizes are still checked)"
            ));
        }
        Ok(())
    }
}

/// XGETBV with ECX = 0: the XCR0 register (which state components the OS
/// enabled, hence the XSAVE layout of signal frames).
#[cfg(target_arch = "x86_64")]
unsafe fn xgetbv0() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY (caller): OSXSAVE is set.
    core::arch::asm!("xgetbv", in("ecx") 0u32, out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags));
    ((hi as u64) << 32) | lo as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_kernel(mut m: Machine, k: &str) -> Machine {
        m.kernel = [0; 65];
        m.kernel[..k.len()].copy_from_slice(k.as_bytes());
        m
    }

    #[test]
    fn the_same_machine_is_compatible() {
        let m = Machine::current();
        assert!(m.xsave_size > 0, "this machine reports no XSAVE size");
        m.check_restorable_on(&m, "/img", false).unwrap();
    }

    #[test]
    fn another_xsave_layout_is_refused_with_both_sides_named() {
        let here = with_kernel(Machine::current(), "6.18.44");
        let mut img = here;
        img.xsave_size = here.xsave_size + 64;
        img.xcr0 |= 1 << 17;
        let e = img.check_restorable_on(&here, "/x", false).unwrap_err();
        assert!(
            e.starts_with(&format!(
                "image /x was taken on kernel 6.18.44 with xsave size {}",
                img.xsave_size
            )),
            "{e}"
        );
        assert!(
            e.contains(&format!(
                "this machine has kernel 6.18.44 with xsave size {}",
                here.xsave_size
            )),
            "{e}"
        );
        assert!(e.contains("XSAVE layout"), "{e}");
    }

    #[test]
    fn missing_cpu_features_are_refused_and_extra_ones_accepted() {
        let here = Machine::current();
        let mut img = here;
        img.features[2] |= 1 << 16; // AVX512F in CPUID(7).EBX
        let mut poorer_here = here;
        poorer_here.features[2] &= !(1 << 16);
        let e = img
            .check_restorable_on(&poorer_here, "/x", false)
            .unwrap_err();
        assert!(e.contains("CPUID(7).EBX bits 0x10000"), "{e}");
        // an image of a machine with fewer features restores here
        poorer_here.check_restorable_on(&img, "/x", false).unwrap();
    }

    #[test]
    fn another_kernel_is_refused_unless_allowed() {
        let here = with_kernel(Machine::current(), "6.18.44");
        let img = with_kernel(here, "6.12.1");
        let e = img.check_restorable_on(&here, "/x", false).unwrap_err();
        assert!(
            e.contains("another kernel release") && e.contains("GRIDMPI_RESTORE_OTHER_KERNEL=1"),
            "{e}"
        );
        img.check_restorable_on(&here, "/x", true).unwrap();
    }

    #[test]
    fn machine_facts_round_trip() {
        let m = Machine::current();
        let mut buf = [0u8; 256];
        let mut e = Enc::new(&mut buf);
        m.encode(&mut e);
        let n = e.pos;
        assert_eq!(Machine::decode(&mut Dec::new(&buf[..n], "x")).unwrap(), m);
    }
}
