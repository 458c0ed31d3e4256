//! Reading a host config file, and checking one however it was made.

use std::path::{Path, PathBuf};

use super::HostConfig;
use crate::fsread;
use crate::sandbox::LimitError;

/// Why a host config cannot be used. Each names the file (when there is
/// one) and the key, and says what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read (missing, not a regular file, too large,
    /// not UTF-8).
    #[error("cannot read host config {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid host config: TOML syntax, an unknown key, a
    /// value of the wrong type (the source names the key and the line).
    #[error("invalid host config {}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's error, with the key and the line.
        #[source]
        source: Box<toml::de::Error>,
    },
    /// A limit out of range in `[limits.default]` or `[limits.max]`.
    #[error("{}`{key}`: {source}; lower it", in_file(path.as_deref()))]
    Limit {
        /// The file, if the config came from one.
        path: Option<PathBuf>,
        /// The table, e.g. `limits.max`.
        key: &'static str,
        /// The value and its bound.
        #[source]
        source: LimitError,
    },
    /// Another value out of range, or two that contradict each other.
    #[error("{}{message}", in_file(path.as_deref()))]
    Value {
        /// The file, if the config came from one.
        path: Option<PathBuf>,
        /// What is wrong, naming the key, and what to do.
        message: String,
    },
}

fn in_file(path: Option<&Path>) -> String {
    path.map(|p| format!("host config {}: ", p.display()))
        .unwrap_or_default()
}

impl HostConfig {
    /// Read the host config at `path`: parsed, every relative path in it
    /// (`cache_dir`, `allow.dirs`, `allow.rw_dirs`,
    /// `integrity.lock_file`, `oci.ca_file`, `oci.docker_config`, `tasks.store`) taken
    /// from the file's directory, and
    /// [checked](Self::validate).
    ///
    /// ```
    /// use toolhost::config::HostConfig;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("toolhost.toml");
    /// std::fs::write(&path, "[integrity]\nlock_file = \"toolhost.lock\"\n")?;
    /// let config = HostConfig::from_file(&path)?;
    /// assert_eq!(config.integrity.lock_file, Some(dir.path().join("toolhost.lock")));
    ///
    /// std::fs::write(&path, "[limits.max]\nmemory_mb = 99999999\n")?;
    /// let error = HostConfig::from_file(&path).unwrap_err();
    /// assert!(error.to_string().contains("limits.max"), "{error}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The file cannot be read, does not parse, or a value is out of range
    /// ([`ConfigError`]).
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text =
            fsread::read_text(path, fsread::HOST_CONFIG_MAX_BYTES, None).map_err(|source| {
                ConfigError::Read {
                    path: path.to_owned(),
                    source,
                }
            })?;
        let mut config: Self = toml::from_str(&text).map_err(|source| ConfigError::Parse {
            path: path.to_owned(),
            source: Box::new(source),
        })?;
        config.resolve_paths(path.parent().unwrap_or(Path::new(".")));
        config.check().map_err(|e| e.in_file(path))?;
        Ok(config)
    }

    /// Take every relative path in the config from `base`: what
    /// [`from_file`](Self::from_file) does with the file's directory.
    pub fn resolve_paths(&mut self, base: &Path) {
        let resolve = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        if let Some(dir) = &mut self.cache_dir {
            resolve(dir);
        }
        self.allow.dirs.iter_mut().for_each(resolve);
        self.allow.rw_dirs.iter_mut().for_each(resolve);
        if let Some(lock) = &mut self.integrity.lock_file {
            resolve(lock);
        }
        if let Some(ca) = &mut self.oci.ca_file {
            resolve(ca);
        }
        if let Some(docker) = &mut self.oci.docker_config {
            resolve(docker);
        }
        if let Some(store) = &mut self.tasks.store {
            resolve(store);
        }
    }

    /// Where tasks are kept: `[tasks] store`, else `tasks.sqlite3` in the
    /// cache directory; `None` (tasks in memory) without either.
    pub fn task_store_path(&self) -> Option<PathBuf> {
        self.tasks
            .store
            .clone()
            .or_else(|| self.cache_dir.as_ref().map(|d| d.join("tasks.sqlite3")))
    }

    /// Check the values that bound each other or have a range: the limits,
    /// `spare_instances` and `max_sessions` against `max_instances`.
    /// [`PluginHost::new`](crate::plugin::PluginHost::new) checks the same.
    ///
    /// # Errors
    ///
    /// The first value out of range, naming its key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.check()
    }

    fn check(&self) -> Result<(), ConfigError> {
        self.limits
            .default_limits()
            .map_err(|source| ConfigError::Limit {
                path: None,
                key: "limits.default",
                source,
            })?;
        self.limits.ceiling().map_err(|source| ConfigError::Limit {
            path: None,
            key: "limits.max",
            source,
        })?;
        let value = |message: String| ConfigError::Value {
            path: None,
            message,
        };
        if self.max_instances == 0 {
            return Err(value(
                "`max_instances` = 0 leaves no room for any call; give at least 1".into(),
            ));
        }
        if self.spare_instances > self.max_instances {
            return Err(value(format!(
                "`spare_instances` = {} is more than `max_instances` = {}; lower it",
                self.spare_instances, self.max_instances
            )));
        }
        self.telemetry.check().map_err(value)?;
        self.oci.check().map_err(value)?;
        if let Some(max) = self.max_sessions
            && (max == 0 || max > self.max_instances)
        {
            return Err(value(format!(
                "`max_sessions` = {max} must be between 1 and `max_instances` = {}; change it",
                self.max_instances
            )));
        }
        Ok(())
    }
}

impl ConfigError {
    fn in_file(self, file: &Path) -> Self {
        match self {
            Self::Limit { key, source, .. } => Self::Limit {
                path: Some(file.to_owned()),
                key,
                source,
            },
            Self::Value { message, .. } => Self::Value {
                path: Some(file.to_owned()),
                message,
            },
            other => other,
        }
    }
}
