//! Unit and property tests of the loop, with an in-process scripted
//! provider (the HTTP providers are tested in the tests crate).

mod driver;
mod machine;
mod params;
mod props;
mod scripted;
