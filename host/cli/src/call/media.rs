//! A result's image and audio parts, for a person at a terminal: written
//! to files whose paths are printed; and every part as JSON for `--json`.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::Value;
use toolhost::text::escape_controls;
use toolhost::tools::Content;

/// Whether `part` is written to a file (an image or audio).
pub(super) fn is_media(part: &Content) -> bool {
    matches!(part, Content::Image { .. } | Content::Audio { .. })
}

/// A new directory for this call's files in the system's temp directory
/// (readable by its owner only), kept after the process ends.
pub(super) fn temp_dir() -> anyhow::Result<PathBuf> {
    let dir = tempfile::Builder::new()
        .prefix("toolhost-call-")
        .tempdir()
        .context(
            "cannot make a directory for the result's images and audio; pass --media-dir DIR",
        )?;
    Ok(dir.keep())
}

/// Write each image and audio part of `content` to a file of its own in
/// `dir` (created if missing), named after the tool, the part's place and
/// its media type (`chart_draw-1.png`); a name already taken gets a
/// suffix, never overwritten. The path of each part written, in order
/// (`None` for the parts that are not media).
pub(super) fn save(
    dir: &Path,
    tool: &str,
    content: &[Content],
) -> anyhow::Result<Vec<Option<PathBuf>>> {
    if content.iter().any(is_media) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot make the media directory {}", dir.display()))?;
    }
    let stem: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    content
        .iter()
        .enumerate()
        .map(|(i, part)| {
            let (media_type, data) = match part {
                Content::Image { media_type, data } | Content::Audio { media_type, data } => {
                    (media_type, data)
                }
                _ => return Ok(None),
            };
            let ext = extension(media_type);
            let path = create_new(dir, &format!("{stem}-{}", i + 1), ext, data)?;
            Ok(Some(path))
        })
        .collect()
}

/// Write `data` to `dir/NAME.EXT`, or `dir/NAME-2.EXT` and on if taken.
fn create_new(dir: &Path, name: &str, ext: &str, data: &[u8]) -> anyhow::Result<PathBuf> {
    for n in 1..=1000 {
        let path = match n {
            1 => dir.join(format!("{name}.{ext}")),
            n => dir.join(format!("{name}-{n}.{ext}")),
        };
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path);
        match file {
            Ok(mut file) => {
                file.write_all(data)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e).with_context(|| format!("cannot create {}", path.display()));
            }
        }
    }
    anyhow::bail!(
        "{} holds 1000 files named {name}-N.{ext} already; pass another --media-dir",
        dir.display()
    )
}

/// A file extension for a media type (`bin` for one not known here).
fn extension(media_type: &str) -> &'static str {
    let essence = media_type.split(';').next().unwrap_or_default().trim();
    match essence.to_ascii_lowercase().as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "image/bmp" => "bmp",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/ogg" => "ogg",
        "audio/flac" => "flac",
        "audio/webm" => "webm",
        _ => "bin",
    }
}

/// Every part as `--json` carries it: `{"type": "image", "media_type",
/// "data" (base64)}` and so on, with `"path"` where it was written.
pub(super) fn parts_json(content: &[Content], saved: &[Option<PathBuf>]) -> anyhow::Result<Value> {
    let parts = content
        .iter()
        .zip(saved)
        .map(|(part, path)| {
            let mut value = serde_json::to_value(part)?;
            if let (Some(path), Value::Object(map)) = (path, &mut value) {
                map.insert("path".into(), Value::String(path.display().to_string()));
            }
            Ok(value)
        })
        .collect::<Result<Vec<_>, serde_json::Error>>()?;
    Ok(Value::Array(parts))
}

/// One line on stderr for each file written: its media type, size and
/// path (stdout keeps the output alone).
pub(super) fn print_saved(content: &[Content], saved: &[Option<PathBuf>]) {
    for (part, path) in content.iter().zip(saved) {
        let (Some(path), Content::Image { media_type, data } | Content::Audio { media_type, data }) =
            (path, part)
        else {
            continue;
        };
        eprintln!(
            "{} ({} bytes): {}",
            escape_controls(media_type),
            data.len(),
            escape_controls(&path.display().to_string())
        );
    }
}
