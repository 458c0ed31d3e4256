//! `toolhost keygen` and `toolhost sign`: Ed25519 keys and signatures for
//! plugin authors.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use toolhost::fsread;
use toolhost::signing::{SigningKey, signature_path};
use toolhost::text::escape_controls;
use toolhost::tools::PluginBudget;

use super::UsageError;

#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Write the secret key here (created with mode 0600; an existing file
    /// is never overwritten). The public key goes to FILE.pub and stdout.
    file: PathBuf,
}

#[derive(Debug, Args)]
pub struct SignArgs {
    /// The component to sign (NAME.wasm).
    wasm: PathBuf,
    /// The secret key file (from `toolhost keygen`; must not be readable
    /// by others).
    #[arg(long, short = 'k', value_name = "FILE")]
    key: PathBuf,
    /// Write the signature here instead of NAME.wasm.sig.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
}

fn shown(path: &Path) -> String {
    escape_controls(&path.display().to_string()).into_owned()
}

pub async fn keygen(args: KeygenArgs) -> anyhow::Result<ExitCode> {
    let mut public_path = args.file.as_os_str().to_owned();
    public_path.push(".pub");
    let public_path = PathBuf::from(public_path);
    for path in [&args.file, &public_path] {
        if path.symlink_metadata().is_ok() {
            return Err(UsageError(anyhow::anyhow!(
                "{} already exists; choose another name (a key is never overwritten)",
                shown(path)
            ))
            .into());
        }
    }
    let key = SigningKey::generate().context("no random bytes for a key")?;
    write_new(&args.file, key.to_file_text().as_bytes(), 0o600)?;
    let public = key.public_key();
    write_new(&public_path, format!("{public}\n").as_bytes(), 0o644)?;
    println!("{public}");
    eprintln!(
        "secret key: {} (keep it private); public key: {} (operators add it to `integrity.trusted_keys`)",
        shown(&args.file),
        shown(&public_path)
    );
    Ok(ExitCode::SUCCESS)
}

/// Create `path` with `bytes`, failing if it exists; on Unix with `mode`
/// from the start (no moment when a secret is readable by others).
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot create {}", shown(path)))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", shown(path)))
}

pub async fn sign(args: SignArgs) -> anyhow::Result<ExitCode> {
    let key = read_key(&args.key).map_err(UsageError)?;
    let max = PluginBudget::default()
        .max_component_mb
        .saturating_mul(1 << 20);
    let wasm = fsread::read_regular(&args.wasm, max, "plugins.max_component_mb")
        .with_context(|| format!("cannot read {}", shown(&args.wasm)))
        .map_err(UsageError)?;
    let signature = key.sign(&wasm);
    let output = args.output.unwrap_or_else(|| signature_path(&args.wasm));
    std::fs::write(&output, signature.to_file_text())
        .with_context(|| format!("cannot write {}", shown(&output)))?;
    println!("{}", shown(&output));
    eprintln!(
        "signed {} (sha256 {}) with {}",
        shown(&args.wasm),
        signature.sha256(),
        signature.key()
    );
    Ok(ExitCode::SUCCESS)
}

fn read_key(path: &Path) -> anyhow::Result<SigningKey> {
    let text = fsread::read_text(path, fsread::KEY_FILE_MAX_BYTES, None)
        .with_context(|| format!("cannot read key file {}", shown(path)))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)?.permissions().mode();
        if mode & 0o077 != 0 {
            anyhow::bail!(
                "key file {} can be read by others (mode {:o}): run `chmod 600 {}`",
                shown(path),
                mode & 0o777,
                shown(path)
            );
        }
    }
    SigningKey::from_file_text(&text).with_context(|| format!("key file {}", shown(path)))
}
