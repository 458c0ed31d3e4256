//! Test fixture: `hostile_spin` loops forever without touching the host.
//! Expected: `timeout` within a millisecond or so of `timeout_ms` (200 ms);
//! the manifest raises fuel to 100 G units so the fuel budget cannot end it
//! first.
//!
//! Before it spins it logs `spin started` (info), its one host call: the
//! event a test waits on to know the call is in flight in the guest.

use toolhost_guest::{NoInput, ToolError};

fn spin(_: NoInput) -> Result<u64, ToolError> {
    toolhost_guest::log::info("spin started");
    let mut n: u64 = 0;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

toolhost_guest::export_tools! {
    hostile_spin: "Test fixture: loops forever." => spin,
}
