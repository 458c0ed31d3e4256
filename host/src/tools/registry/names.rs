//! Tool names and versions in the registry: which tool owns a name when
//! two offer it, and what a version may be.

use super::*;

/// Which of two tools offering one name keeps it: the one whose source
/// comes first in this order (smaller is stronger). Native tools (the
/// embedding program's own code), then plugins by file path (as
/// [`load_dir`](crate::plugin::PluginHost::load_dir) orders them), then
/// REST tools, then MCP servers by name. The rank depends on the tool
/// alone, never on when it was registered, so the same tools give the same
/// owners whatever order they arrive, leave and come back in. Two tools of
/// one rank (two native tools, two REST tools) are a plain duplicate.
pub(super) fn rank(tool: &dyn Tool) -> (u8, Option<String>) {
    match tool.origin() {
        ToolOrigin::Native => (0, None),
        ToolOrigin::Plugin { path, .. } => (1, Some(path.to_string_lossy().into_owned())),
        ToolOrigin::Rest { .. } => (2, None),
        ToolOrigin::Mcp { server } => (3, Some(server)),
    }
}

/// Whether `version` is one a tool may carry: 1 to 64 characters of
/// `a-z A-Z 0-9 . _ - +`.
pub fn is_valid_version(version: &str) -> bool {
    (1..=64).contains(&version.len())
        && version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'+'))
}

/// Whether two sets hold the very same tools under the same names, in the
/// same order (an options change keeps the tools).
pub(super) fn same_tools(
    a: &BTreeMap<String, Vec<Arc<Entry>>>,
    b: &BTreeMap<String, Vec<Arc<Entry>>>,
) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|((name_a, a), (name_b, b))| {
            name_a == name_b
                && a.len() == b.len()
                && a.iter().zip(b).all(|(a, b)| Arc::ptr_eq(&a.tool, &b.tool))
        })
}

/// Add `entry` to `tools`, unless its name is taken by a tool (without a
/// version, or of the same version) that ranks as high or higher
/// ([`rank`]); the weaker tools it clashes with are removed and reported
/// in `displaced`.
pub(super) fn insert(
    tools: &mut BTreeMap<String, Vec<Arc<Entry>>>,
    entry: Arc<Entry>,
    displaced: &mut Vec<RegistryError>,
) -> Result<(), RegistryError> {
    let name = &entry.tool.spec().name;
    let version = entry.tool.version();
    let clashes = |e: &Arc<Entry>| {
        let other = e.tool.version();
        version.is_none() || other.is_none() || other == version
    };
    let versions = tools.entry(name.clone()).or_default();
    let strength = rank(entry.tool.as_ref());
    if let Some(clash) = versions
        .iter()
        .find(|e| clashes(e) && rank(e.tool.as_ref()) <= strength)
    {
        return Err(RegistryError::DuplicateName {
            name: name.clone(),
            first: describe_origin(clash.tool.as_ref()),
            second: describe_origin(entry.tool.as_ref()),
        });
    }
    versions.retain(|e| {
        if !clashes(e) {
            return true;
        }
        displaced.push(RegistryError::Displaced {
            name: name.clone(),
            owner: describe_origin(entry.tool.as_ref()),
            displaced: describe_origin(e.tool.as_ref()),
        });
        false
    });
    versions.push(entry);
    Ok(())
}
