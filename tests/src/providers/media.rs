//! What each provider accepts as an image in a tool result: the media
//! types it lists, bytes that are base64 and that are what the media type
//! says (the real APIs sniff the bytes and refuse a mismatch).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// The media type the bytes look like, by their magic numbers.
fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Why `data` (base64) is not an image of `media_type`, if it is not one.
pub(super) fn image_problem(media_type: &str, data: &str) -> Option<String> {
    let Ok(bytes) = STANDARD.decode(data) else {
        return Some("the image data is not valid base64".into());
    };
    match sniff(&bytes) {
        Some(found) if found == media_type => None,
        Some(found) => Some(format!(
            "the image was specified using the {media_type} media type, but the image appears to be a {found} image"
        )),
        None => Some("could not process image".into()),
    }
}

/// The media type and base64 data of a `data:` URL.
pub(super) fn data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (media_type, data) = rest.split_once(";base64,")?;
    Some((media_type, data))
}
