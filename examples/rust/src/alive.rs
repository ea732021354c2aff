//! Whether any process of an invocation is still running, seen through the emitter's
//! *alive file* rather than through the runner under test.
//!
//! The kit's emitter takes a shared `flock` on the file named by its script's `alive`
//! key before it writes anything, and every grandchild it forks inherits that lock, so
//! the lock is held exactly as long as one of them lives. Taking the lock exclusively
//! (without blocking) therefore answers "is the command really gone?" after a time
//! limit, which is what the kit's Python driver checks too (SOO-TIMEOUT-GROUP).

use std::ffi::c_int;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

extern "C" {
    fn flock(fd: c_int, operation: c_int) -> c_int;
    fn kill(pid: c_int, sig: c_int) -> c_int;
}

const LOCK_EX: c_int = 2;
const LOCK_NB: c_int = 4;
const SIGKILL: c_int = 9;

/// `Some(true)` while a process of the invocation holds its alive file, `Some(false)`
/// once none does, `None` when no emitter ever created it.
pub fn alive(path: &Path) -> Option<bool> {
    let file = File::open(path).ok()?;
    // SAFETY: `flock` takes a descriptor we own for the whole call and a flag word.
    let status = unsafe { flock(file.as_raw_fd(), LOCK_EX | LOCK_NB) };
    // Closing the file (when it is dropped) releases the lock if we got it.
    Some(status != 0)
}

/// Kill what is left of an invocation at the very end of a scenario: only processes whose
/// command line names this alive file, so a reused process ID is never hit. A detached
/// grandchild (one that left the process group) holds `FILE.detached` instead of FILE,
/// so FILE says whether the command's group is gone; it is killed here too.
pub fn kill_survivors(path: &Path) {
    let marker = path.to_string_lossy().into_owned().into_bytes();
    let mut detached = path.as_os_str().to_owned();
    detached.push(".detached");
    for held in [path, Path::new(&detached)] {
        kill_holders(held, &marker);
    }
}

fn kill_holders(path: &Path, marker: &[u8]) {
    if alive(path) != Some(true) {
        return;
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    for pid in text
        .split_whitespace()
        .filter_map(|p| p.parse::<c_int>().ok())
    {
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if pid > 1 && cmdline.windows(marker.len()).any(|w| w == marker) {
            // SAFETY: `kill` takes plain integers and touches no memory of ours.
            unsafe {
                kill(-pid, SIGKILL);
                kill(pid, SIGKILL);
            }
        }
    }
}
