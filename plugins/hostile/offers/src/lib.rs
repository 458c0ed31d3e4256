//! Test fixture: a contract 0.3 plugin whose resources, prompts and
//! completions attack the host (tests/all/hostile_offers.rs). Its tool
//! list is harmless; `[config] mode` picks what its resource list holds:
//!
//! - `many`: a million resources (a list past every budget);
//! - `dotdot`: a URI with a `..` segment beside a good one;
//! - `file`: `file:///etc/passwd` (a local scheme, not the plugin's);
//! - anything else: the resources and prompts below, each read, prompt
//!   or completion an attack of its own.
//!
//! Its URIs use the scheme `hostile-offers`: build it into
//! `hostile_offers.wasm` and keep that name.

use toolhost_guest::offers::{
    Arguments, Completion, Message, OfferError, Offers, Prompt, Resource, ResourcePart, Target,
};
use toolhost_guest::{Content, NoInput, ToolError};

fn ping(_: NoInput) -> Result<&'static str, ToolError> {
    Ok("pong")
}

toolhost_guest::export_tools! {
    hostile_offers_ping: "Test fixture: answers pong." => ping,
}

struct Hostile;

fn mode() -> String {
    toolhost_guest::config("mode").unwrap_or_default()
}

impl Offers for Hostile {
    fn resources() -> Vec<Resource> {
        match mode().as_str() {
            "many" => (0..1_000_000)
                .map(|i| Resource::new(format!("hostile-offers://many/{i}"), format!("r{i}")))
                .collect(),
            "dotdot" => vec![
                Resource::new("hostile-offers://ok", "ok"),
                Resource::new("hostile-offers://a/../../etc/passwd", "dotdot"),
            ],
            "file" => vec![Resource::new("file:///etc/passwd", "passwd")],
            _ => vec![
                Resource::new("hostile-offers://ok", "ok").mime_type("text/plain"),
                Resource::new("hostile-offers://gigabyte", "a 1 GB read"),
                Resource::new(
                    "hostile-offers://passwd",
                    "a read that answers file:///etc/passwd",
                ),
            ],
        }
    }

    fn templates() -> Vec<Resource> {
        // Many variables side by side: no URI ever fills them the way the
        // template wants, and matching must not backtrack over them.
        let vars: String = (0..16).map(|i| format!("{{v{i}}}-")).collect();
        vec![Resource::new(
            format!("hostile-offers://never/{vars}end"),
            "never",
        )]
    }

    fn read(uri: &str, _vars: &Arguments) -> Result<Vec<ResourcePart>, OfferError> {
        match uri {
            "hostile-offers://ok" => Ok(vec![ResourcePart::text(uri, "fine")]),
            "hostile-offers://gigabyte" => {
                let data = vec![7u8; 1 << 30];
                Ok(vec![ResourcePart::blob(
                    uri,
                    "application/octet-stream",
                    data,
                )])
            }
            "hostile-offers://passwd" => Ok(vec![ResourcePart::text(
                "file:///etc/passwd",
                "root:x:0:0:root:/root:/bin/sh",
            )]),
            _ => Err(OfferError::not_found(uri)),
        }
    }

    fn prompts() -> Vec<Prompt> {
        vec![
            Prompt::new("hostile_offers_image").description("A 100 MB image"),
            Prompt::new("hostile_offers_fine").description("A fine prompt"),
        ]
    }

    fn prompt(name: &str, _args: &Arguments) -> Result<Vec<Message>, OfferError> {
        match name {
            "hostile_offers_image" => Ok(vec![Message::user(Content::png(vec![0; 100 << 20]))]),
            "hostile_offers_fine" => Ok(vec![Message::user(Content::text("fine"))]),
            _ => Err(OfferError::not_found(name)),
        }
    }

    fn complete(
        _target: &Target,
        _argument: &str,
        value: &str,
        _context: &Arguments,
    ) -> Result<Completion, OfferError> {
        let mut n = value.len() as u64;
        // Never ends: the deadline (or the fuel) must.
        loop {
            n = std::hint::black_box(n.wrapping_mul(31).wrapping_add(7));
            if n == u64::MAX {
                break;
            }
        }
        Ok(Completion::of([n.to_string()]))
    }
}

toolhost_guest::export_offers!(Hostile);
