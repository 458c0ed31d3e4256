//! The programs in `examples/` run, and do what their comments say.

use std::process::Command;

use toolhost_tests::plugins::{example_bin, plugin_dir};

#[test]
fn embed_example_calls_tools_and_handles_each_error_kind() {
    let out = Command::new(example_bin("embed"))
        .arg(plugin_dir())
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains(r#"calc_eval({"expression":"2 * (3 + 4) ^ 2"}) = {"value":98.0}"#),
        "{stdout}"
    );
    assert!(
        stdout.contains("calc_eval: fix the input: at column 3: division by zero"),
        "{stdout}"
    );
    assert!(
        stdout.contains("calc_eval: fix the input: the input does not match"),
        "{stdout}"
    );
    assert!(stdout.contains("no_such_tool: no such tool"), "{stdout}");
    // files asks for a directory grant; the example's deny-all host refuses it.
    assert!(
        stdout.contains("skipped:") && stdout.contains("files.toml"),
        "{stdout}"
    );
}

#[test]
fn agent_example_runs_the_capped_loop_over_the_plugins() {
    let out = Command::new(example_bin("agent"))
        .arg(plugin_dir())
        .env_remove("TOOLHOST_PROVIDER")
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    // The recording asks for four calls at once; the cap of two runs two
    // and declines two, which the model asks for again in the next round.
    assert!(
        stdout.contains(r#"tool calc_eval -> {"value":126.585}"#),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("Declined: not executed").count(),
        2,
        "{stdout}"
    );
    assert!(
        stdout.contains(r#"tool text_transform -> "three-marathons-in-a-week""#),
        "{stdout}"
    );
    assert!(
        stdout.contains("answer after 3 round(s) and 4 tool call(s): Three marathons"),
        "{stdout}"
    );
}
