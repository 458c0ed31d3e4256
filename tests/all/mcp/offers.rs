//! `toolhost serve` offering resources, resource templates, prompts and
//! completions (issue 42's library and serve slice), here those of an
//! `[[mcp]]` upstream, npm `@modelcontextprotocol/server-everything`:
//! the official Python SDK's client over stdio and streamable HTTP
//! (tests/mcp/offers_client.py), and raw requests of the sessionless
//! 2026-07-28 revision.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolhost_tests::mcp::{ServeHttp, python_client, stdio_command};
use toolhost_tests::plugins::workspace_root;

/// A plugin directory (empty) and a config with server-everything over
/// stdio as `[[mcp]]` server `everything` (also the CLI's tests',
/// `run_cli/offers.rs`).
pub(crate) struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    pub(crate) fn new() -> Self {
        let js = workspace_root().join(
            "tests/mcp/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        );
        assert!(
            js.is_file(),
            "no {}: run .ci/install-guest-toolchains.sh mcp to install the MCP peers",
            js.display()
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("plugins")).unwrap();
        let table = format!(
            "[[mcp]]\nname = \"everything\"\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n",
            json!(js.display().to_string())
        );
        std::fs::write(dir.path().join("toolhost.toml"), table).unwrap();
        Self { dir }
    }

    pub(crate) fn plugins(&self) -> PathBuf {
        self.dir.path().join("plugins")
    }

    pub(crate) fn config(&self) -> String {
        self.dir.path().join("toolhost.toml").display().to_string()
    }
}

/// What the Python SDK's client saw, checked the same for each transport.
fn check_sdk_report(report: &Value) {
    let caps = &report["capabilities"];
    assert_eq!(caps["resources"]["subscribe"], true, "{report}");
    assert_eq!(caps["resources"]["listChanged"], true, "{report}");
    assert_eq!(caps["prompts"]["listChanged"], true, "{report}");
    assert_eq!(caps["completions"], true, "{report}");
    let resources = report["resources"].as_array().unwrap();
    assert!(
        resources.iter().any(|r| r["uri"]
            .as_str()
            .unwrap()
            .starts_with("demo://resource/static/document/")),
        "the upstream's resources keep their URIs: {report}"
    );
    let templates = report["templates"].as_array().unwrap();
    assert!(
        templates.contains(&json!("demo://resource/dynamic/text/{resourceId}")),
        "{report}"
    );
    let prompts = report["prompts"].as_array().unwrap();
    assert!(
        prompts.contains(&json!({"name": "everything_args-prompt",
            "arguments": [["city", true], ["state", false]]})),
        "prompts get the server's prefix: {report}"
    );
    let text = &report["read_text"][0];
    assert!(!text["text"].as_str().unwrap().is_empty(), "{report}");
    assert!(
        report["read_template_text"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Resource 3: This is a plaintext resource"),
        "{report}"
    );
    let blob = &report["read_blob"][0];
    assert_eq!(blob["uri"], "demo://resource/dynamic/blob/4", "{report}");
    assert!(
        blob["blob"]
            .as_str()
            .unwrap()
            .starts_with("Resource 4: This is a base64 blob"),
        "{report}"
    );
    let unknown = &report["unknown"];
    assert_eq!(unknown["code"], -32602, "{report}");
    assert_eq!(unknown["data"]["uri"], "demo://no/such/thing", "{report}");
    assert_eq!(
        report["prompt"],
        json!([{"role": "user", "text": "What's weather in Warsaw, Mazovia?", "type": "text"}])
    );
    assert_eq!(report["prompt_missing"]["code"], -32602, "{report}");
    assert_eq!(report["completion"], json!(["Engineering"]), "{report}");
    assert_eq!(report["template_completion"], json!(["7"]), "{report}");
    // The upstream's `notifications/resources/updated` reaches the client
    // subscribed through serve.
    let updated = report["updated"].as_array().unwrap();
    assert!(
        updated.contains(&report["subscribed"]),
        "the subscribed resource's update arrived: {report}"
    );
}

#[test]
fn the_python_sdk_lists_reads_gets_and_completes_an_upstream_s_offers_over_stdio() {
    let setup = Setup::new();
    let command = stdio_command(&setup.plugins(), &["--config", &setup.config()]);
    let report = python_client("tests/mcp/offers_client.py", &["stdio", &command]);
    check_sdk_report(&report);
}

#[test]
fn the_python_sdk_lists_reads_gets_and_completes_an_upstream_s_offers_over_http() {
    let setup = Setup::new();
    let server = ServeHttp::start(&setup.plugins(), &["--config", &setup.config()], &[]);
    let report = python_client("tests/mcp/offers_client.py", &["http", &server.url]);
    check_sdk_report(&report);
}

/// One raw request of the sessionless 2026-07-28 revision to `addr`, with
/// the `Mcp-Name` header the revision asks for: a read's URI, a prompt's
/// name.
fn stateless(addr: &str, method: &str, params: Value) -> Value {
    let name = match method {
        "resources/read" => params["uri"].as_str().map(str::to_owned),
        "prompts/get" => params["name"].as_str().map(str::to_owned),
        _ => None,
    };
    super::handles::stateless(addr, method, name.as_deref(), params)
}

fn serve_2026(plugins: &Path, config: &str) -> ServeHttp {
    ServeHttp::start(plugins, &["--config", config], &[])
}

#[test]
fn raw_2026_07_28_requests_list_read_get_and_complete_with_cache_hints() {
    let setup = Setup::new();
    let server = serve_2026(&setup.plugins(), &setup.config());
    let addr = &server.addr;
    let discovered = stateless(addr, "server/discover", json!({}));
    let caps = &discovered["result"]["capabilities"];
    assert!(
        caps["resources"].is_object() && caps["prompts"].is_object(),
        "{discovered}"
    );

    let listed = stateless(addr, "resources/list", json!({}));
    let result = &listed["result"];
    assert!(
        !result["resources"].as_array().unwrap().is_empty(),
        "{listed}"
    );
    assert!(
        result["ttlMs"].is_u64() && result["cacheScope"].is_string(),
        "{listed}"
    );

    let read = stateless(
        addr,
        "resources/read",
        json!({"uri": "demo://resource/dynamic/text/2"}),
    );
    let contents = &read["result"]["contents"][0];
    assert_eq!(contents["uri"], "demo://resource/dynamic/text/2", "{read}");
    assert!(read["result"]["ttlMs"].is_u64(), "{read}");

    let unknown = stateless(addr, "resources/read", json!({"uri": "demo://nothing"}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(
        unknown["error"]["data"]["uri"], "demo://nothing",
        "{unknown}"
    );
    let passwd = stateless(addr, "resources/read", json!({"uri": "file:///etc/passwd"}));
    assert_eq!(passwd["error"]["code"], -32602, "{passwd}");

    let templates = stateless(addr, "resources/templates/list", json!({}));
    assert!(
        templates["result"]["resourceTemplates"]
            .as_array()
            .unwrap()
            .len()
            >= 2,
        "{templates}"
    );
    let prompts = stateless(addr, "prompts/list", json!({}));
    assert!(
        prompts["result"]["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "everything_simple-prompt"),
        "{prompts}"
    );
    let got = stateless(
        addr,
        "prompts/get",
        json!({"name": "everything_args-prompt", "arguments": {"city": "Oslo"}}),
    );
    assert_eq!(
        got["result"]["messages"][0]["content"]["text"], "What's weather in Oslo?",
        "{got}"
    );
    let missing = stateless(
        addr,
        "prompts/get",
        json!({"name": "everything_args-prompt"}),
    );
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    let completed = stateless(
        addr,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "everything_completable-prompt"},
               "argument": {"name": "name", "value": "A"},
               "context": {"arguments": {"department": "Engineering"}}}),
    );
    assert_eq!(
        completed["result"]["completion"]["values"],
        json!(["Alice"]),
        "{completed}"
    );
    let bad_cursor = stateless(addr, "resources/list", json!({"cursor": "!!"}));
    assert_eq!(bad_cursor["error"]["code"], -32602, "{bad_cursor}");
}
