#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| toolhost_fuzz::targets::question(data));
