//! A plugin from bytes a program holds, with a manifest built in code: a
//! component embedded in the program's binary, fetched, or built on the
//! fly, without a plugin directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Manifest, Plugin, PluginError, PluginHost, Settings};
use crate::sandbox::Sandbox;

impl PluginHost {
    /// Load the component `wasm` as plugin `name`, under `manifest` (as if
    /// it were `NAME.toml`, checked against the operator's config the same
    /// way; a relative directory grant is taken from the current
    /// directory). Its compiled code is cached by digest like a file's.
    ///
    /// ```no_run
    /// use toolhost::config::HostConfig;
    /// use toolhost::plugin::{Manifest, PluginHost};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let host = PluginHost::new(HostConfig::default())?;
    /// let wasm = std::fs::read("plugins/calc.wasm")?; // or include_bytes!
    /// let manifest: Manifest = toml::from_str("[limits]\ntimeout_ms = 500")?;
    /// let plugin = host.load_bytes("calc", wasm, manifest).await?;
    /// let registry = toolhost::tools::ToolRegistry::new();
    /// plugin.register_into(&registry)?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `name` is not a plugin name; the manifest asks for more than
    /// allowed, or pins other bytes; the host loads only pinned or signed
    /// plugins (a lock file or `require_signatures`), which bytes from a
    /// program cannot be; or the component does not work.
    pub async fn load_bytes(
        &self,
        name: &str,
        wasm: Vec<u8>,
        manifest: Manifest,
    ) -> Result<Arc<Plugin>, PluginError> {
        // Messages name the plugin as if it were a file of the directory.
        let path = PathBuf::from(format!("{name}.wasm"));
        let refuse = |message: String| PluginError::Manifest {
            path: path.clone(),
            message,
        };
        if !crate::tools::is_valid_tool_name(name) {
            return Err(refuse(format!(
                "plugin name `{}` is not valid: use 1 to 64 characters of a-z, A-Z, 0-9, `_` and `-`",
                crate::text::untrusted(name, 80)
            )));
        }
        let integrity = &self.config.integrity;
        if integrity.lock_file.is_some() || integrity.require_signatures {
            return Err(refuse(
                "not loaded: this host loads only pinned or signed plugins (`integrity.lock_file` or \
                 `integrity.require_signatures`), and a component given as bytes can be neither; \
                 put it in the plugin directory, locked or signed"
                    .into(),
            ));
        }
        if let Some(pin) = manifest.sha256 {
            let actual = crate::signing::Sha256Digest::of(&wasm);
            if actual != pin {
                return Err(refuse(format!(
                    "its SHA-256 is {actual}, but its manifest pins sha256 = \"{pin}\"; give the pinned bytes or change the pin"
                )));
            }
        }
        let max = self.config.plugins.max_component_mb.saturating_mul(1 << 20);
        if u64::try_from(wasm.len()).unwrap_or(u64::MAX) > max {
            return Err(refuse(format!(
                "the component is {} bytes, more than `plugins.max_component_mb` allows; raise it",
                wasm.len()
            )));
        }
        let resolved = self.resolve(&manifest, Path::new(&path))?;
        let settings = Settings {
            manifest,
            manifest_path: None,
            manifest_sha256: None,
            resolved,
        };
        let sandbox = self.sandbox.clone();
        let compiled = tokio::task::spawn_blocking(move || {
            let digest = Sandbox::digest(&wasm);
            (digest, sandbox.compile(&wasm, &digest))
        })
        .await
        .map_err(|e| PluginError::Describe {
            path: path.clone(),
            message: format!("the compiler thread failed: {e}"),
        })?;
        let (digest, result) = compiled;
        let (component, cache) = result.map_err(|error| PluginError::Component {
            path: path.clone(),
            error,
        })?;
        self.instantiate(&path, settings, digest, &component, cache)
            .await
    }
}
