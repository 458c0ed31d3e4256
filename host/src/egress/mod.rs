//! Where the host lets outbound HTTP go: origin patterns
//! ([`HttpOrigin`]) and the address ranges that stay closed unless the
//! operator opens them. Shared by every path that leaves the machine: a
//! plugin's `wasi:http` requests ([`sandbox`](crate::sandbox)) and REST
//! tools ([`tools::rest`](crate::tools::rest)).

mod address;
mod origin;

pub use origin::{HttpOrigin, HttpOriginError};

pub(crate) use address::private_range;
pub(crate) use origin::{Scheme, normalize_host};

/// The operator's egress policy: the origins outbound requests may reach,
/// and whether they may reach loopback, private and link-local addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Egress {
    /// Origin patterns a request must be within.
    pub origins: Vec<HttpOrigin>,
    /// Let requests reach non-public addresses (checked on the resolved
    /// address, not the name).
    pub private_addresses: bool,
}
