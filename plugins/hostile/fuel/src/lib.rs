//! Test fixture: `hostile_burn` loops forever under a tiny fuel budget
//! (manifest `fuel = 2000000`, `timeout_ms = 10000`).
//! Expected: `out_of_fuel` within a millisecond or so, never `timeout`.

use toolhost_guest::{NoInput, ToolError};

fn burn(_: NoInput) -> Result<u64, ToolError> {
    let mut n: u64 = 0;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

toolhost_guest::export_tools! {
    hostile_burn: "Test fixture: burns CPU until its fuel runs out." => burn,
}
