//! Server names, prefixes, and the registry names of a server's tools.

/// Whether `name` may name a server: 1 to 32 characters of
/// `a-z A-Z 0-9 _ -` (it goes into the default prefix and messages).
pub(super) fn is_valid_server_name(name: &str) -> bool {
    (1..=32).contains(&name.len()) && name.bytes().all(is_name_byte)
}

/// Whether `prefix` may start tool names: at most 32 characters of
/// `a-z A-Z 0-9 _ -` (empty: none).
pub(super) fn is_valid_prefix(prefix: &str) -> bool {
    prefix.len() <= 32 && prefix.bytes().all(is_name_byte)
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The registry name of the server's tool `remote`: `prefix` and `remote`
/// with every character a provider would refuse (`.`, `/`, spaces, ...)
/// made `_`. `None` when the result is longer than a tool name may be, or
/// `remote` is empty.
pub(super) fn tool_name(prefix: &str, remote: &str) -> Option<String> {
    if remote.is_empty() {
        return None;
    }
    let mut name = String::with_capacity(prefix.len() + remote.len());
    name.push_str(prefix);
    name.extend(remote.chars().map(|c| {
        if c.is_ascii() && is_name_byte(c as u8) {
            c
        } else {
            '_'
        }
    }));
    crate::tools::is_valid_tool_name(&name).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_and_made_valid() {
        assert_eq!(
            tool_name("time_", "get_current_time").as_deref(),
            Some("time_get_current_time")
        );
        assert_eq!(
            tool_name("everything_", "get-sum").as_deref(),
            Some("everything_get-sum")
        );
        assert_eq!(tool_name("", "echo").as_deref(), Some("echo"));
        assert_eq!(
            tool_name("fs_", "files/read.all é").as_deref(),
            Some("fs_files_read_all__")
        );
        assert_eq!(tool_name("p_", ""), None);
        assert_eq!(tool_name("p_", &"x".repeat(62)).map(|n| n.len()), Some(64));
        assert_eq!(tool_name("p_", &"x".repeat(63)), None);
    }

    #[test]
    fn server_names_and_prefixes_are_checked() {
        assert!(is_valid_server_name("time"));
        assert!(is_valid_server_name("server-everything_2"));
        assert!(!is_valid_server_name(""));
        assert!(!is_valid_server_name("a b"));
        assert!(!is_valid_server_name(&"a".repeat(33)));
        assert!(is_valid_prefix(""));
        assert!(is_valid_prefix("t-"));
        assert!(!is_valid_prefix("t."));
    }
}
