//! What changed in one agent's manifest between two catalog revisions: the `tools_changed`
//! event of the live stream (docs/api.md, `GET /agents/tools/stream`).
//!
//! A subscriber's previous manifest is kept as a [`ManifestSummary`] — per tool id one hash of
//! its entry (content hash and groups) — rather than as the old manifest, which would pin the
//! old snapshot in memory. Summaries belong to a distinct (claims, options), not to a
//! connection, so their cost scales with distinct manifests.

use std::sync::Arc;

use super::entry::Field;
use super::manifest::{Entry, Manifest};

/// Hash of one manifest entry as the agent sees it: the tool's content and its groups, as far
/// as the manifest's fields show them (a change to a field not asked for is no change).
type EntryHash = [u8; 16];

/// A compact picture of a manifest, enough to diff the next one against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestSummary {
    /// `(tool id, entry hash)`, ascending by tool id (the manifest's order).
    entries: Vec<(Arc<str>, EntryHash)>,
    etag: Arc<str>,
    revision: u64,
}

impl ManifestSummary {
    pub fn of(manifest: &Manifest<'_>) -> ManifestSummary {
        let entries = manifest
            .entries
            .iter()
            .map(|entry| {
                (
                    Arc::from(manifest.tool_id(entry)),
                    entry_hash(manifest, entry),
                )
            })
            .collect();
        ManifestSummary {
            entries,
            etag: Arc::from(manifest.etag()),
            revision: manifest.revision(),
        }
    }

    /// The etag of the summarised manifest, quotes included.
    pub fn etag(&self) -> &Arc<str> {
        &self.etag
    }

    pub fn revision(&self) -> u64 {
        self.revision
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn entry_hash(manifest: &Manifest<'_>, entry: &Entry) -> EntryHash {
    let snapshot = manifest.snapshot;
    let mut hasher = blake3::Hasher::new();
    hasher.update(
        &snapshot
            .tool_entry(entry.tool as usize)
            .content_hash(manifest.fields),
    );
    hasher.update(&[u8::from(manifest.include_disabled)]);
    if manifest.fields.contains(Field::Groups) {
        for &group in manifest.entry_groups(entry) {
            hasher.update(&snapshot.groups[group as usize].id_digest);
        }
    }
    let mut out = [0u8; 16];
    out.copy_from_slice(&hasher.finalize().as_bytes()[..16]);
    out
}

/// The difference from a [`ManifestSummary`] to a newer manifest.
#[derive(Debug)]
pub struct ManifestDiff<'m, 's> {
    manifest: &'m Manifest<'s>,
    /// Entries of the new manifest whose tool was not in the old one.
    added: Vec<&'m Entry>,
    /// Entries present in both whose content or groups changed.
    updated: Vec<&'m Entry>,
    /// Tool ids of the old manifest that the new one lacks, ascending.
    removed: Vec<Arc<str>>,
}

impl<'m, 's> ManifestDiff<'m, 's> {
    /// Merges the two sorted id lists in one pass.
    pub fn between(previous: &ManifestSummary, manifest: &'m Manifest<'s>) -> Self {
        let mut diff = ManifestDiff {
            manifest,
            added: Vec::new(),
            updated: Vec::new(),
            removed: Vec::new(),
        };
        let mut old = previous.entries.iter().peekable();
        for entry in &manifest.entries {
            let id = manifest.tool_id(entry);
            loop {
                match old.peek() {
                    Some((old_id, _)) if &**old_id < id => {
                        diff.removed.push(Arc::clone(old_id));
                        old.next();
                    }
                    Some((old_id, old_hash)) if &**old_id == id => {
                        if *old_hash != entry_hash(manifest, entry) {
                            diff.updated.push(entry);
                        }
                        old.next();
                        break;
                    }
                    _ => {
                        diff.added.push(entry);
                        break;
                    }
                }
            }
        }
        diff.removed.extend(old.map(|(id, _)| Arc::clone(id)));
        diff
    }

    /// No tool was added, updated or removed (the etag may still differ, by its warnings).
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.updated.is_empty() && self.removed.is_empty()
    }

    pub fn added_ids(&self) -> Vec<&'s str> {
        self.added
            .iter()
            .map(|e| self.manifest.tool_id(e))
            .collect()
    }

    pub fn updated_ids(&self) -> Vec<&'s str> {
        self.updated
            .iter()
            .map(|e| self.manifest.tool_id(e))
            .collect()
    }

    pub fn removed_ids(&self) -> impl Iterator<Item = &str> {
        self.removed.iter().map(|id| &**id)
    }

    /// Writes the `tools_changed` data:
    /// `{"revision":R,"etag":"…","added":[…],"updated":[…],"removed":[…],"count":N}`, entries
    /// exactly as in the manifest body, `count` the size of the new manifest.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"revision\":");
        out.extend_from_slice(self.manifest.revision().to_string().as_bytes());
        out.extend_from_slice(b",\"etag\":");
        super::manifest::write_json_string(self.manifest.etag(), out);
        for (name, entries) in [
            (&b",\"added\":["[..], &self.added),
            (b",\"updated\":[", &self.updated),
        ] {
            out.extend_from_slice(name);
            for (i, entry) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                self.manifest.write_entry(entry, out);
            }
            out.push(b']');
        }
        out.extend_from_slice(b",\"removed\":[");
        for (i, id) in self.removed.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            super::manifest::write_json_string(id, out);
        }
        out.extend_from_slice(b"],\"count\":");
        out.extend_from_slice(self.manifest.len().to_string().as_bytes());
        out.push(b'}');
    }

    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        self.write_json(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::domain::claims::Claims;
    use crate::domain::manifest::ManifestOptions;
    use crate::domain::model::Catalog;
    use crate::domain::snapshot::Snapshot;

    /// Three tools; `g-all` holds all of them, `g-get` the GET ones; `reader`s get `g-get`,
    /// `staff` get both groups.
    fn catalog(edit: impl FnOnce(&mut Value)) -> Snapshot {
        let mut value = json!({
            "sources": [{"id": "s", "name": "svc", "type": "manual"}],
            "tools": [
                {"source_id": "s", "operation_id": "a", "name": "a", "method": "GET"},
                {"source_id": "s", "operation_id": "b", "name": "b", "method": "GET"},
                {"source_id": "s", "operation_id": "c", "name": "c", "method": "POST"}
            ],
            "groups": [{"id": "g-all", "name": "all", "selectors": [{}]},
                       {"id": "g-get", "name": "get", "selectors": [{"method_pattern": "GET"}]}],
            "policies": [
                {"id": "p-r", "name": "r", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}],
                 "allowed_group_ids": ["g-get"]},
                {"id": "p-s", "name": "s", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "staff"}],
                 "allowed_group_ids": ["g-all", "g-get"]}
            ]
        });
        edit(&mut value);
        let mut catalog: Catalog = serde_json::from_value(value).expect("catalog parses");
        catalog.normalize();
        catalog.sort_by_id();
        Snapshot::compile(catalog, 1).expect("compiles")
    }

    fn claims(role: &str) -> Claims {
        json!({"sub": "x", "roles": [role]})
            .as_object()
            .expect("object")
            .clone()
    }

    /// (added, updated, removed) tool ids and the parsed event data.
    fn diff(
        before: &Snapshot,
        after: &Snapshot,
        role: &str,
    ) -> (Vec<String>, Vec<String>, Vec<String>, Value) {
        let options = ManifestOptions::default();
        let old = ManifestSummary::of(&before.manifest(&claims(role), &options));
        let new = after.manifest(&claims(role), &options);
        let diff = ManifestDiff::between(&old, &new);
        let owned = |ids: Vec<&str>| ids.into_iter().map(str::to_owned).collect::<Vec<_>>();
        let data: Value = serde_json::from_slice(&diff.to_json()).expect("valid JSON");
        (
            owned(diff.added_ids()),
            owned(diff.updated_ids()),
            owned(diff.removed_ids().collect()),
            data,
        )
    }

    #[test]
    fn identical_manifests_differ_in_nothing() {
        let (added, updated, removed, data) = diff(&catalog(|_| {}), &catalog(|_| {}), "staff");
        assert!(added.is_empty() && updated.is_empty() && removed.is_empty());
        assert_eq!(data["count"], json!(3));
    }

    #[test]
    fn a_new_matching_tool_is_added_in_order() {
        let after = catalog(|c| {
            c["tools"].as_array_mut().expect("tools").push(
                json!({"source_id": "s", "operation_id": "ab", "name": "ab", "method": "GET"}),
            );
        });
        let (added, updated, removed, data) = diff(&catalog(|_| {}), &after, "reader");
        assert_eq!(added, ["s:ab"]);
        assert!(updated.is_empty() && removed.is_empty());
        assert_eq!(data["added"][0]["tool_id"], json!("s:ab"));
        assert_eq!(data["added"][0]["groups"], json!(["g-get"]));
        assert_eq!(data["count"], json!(3));
    }

    #[test]
    fn a_content_change_is_an_update_with_the_full_entry() {
        let after = catalog(|c| c["tools"][1]["description"] = json!("now documented"));
        let (added, updated, removed, data) = diff(&catalog(|_| {}), &after, "reader");
        assert_eq!(updated, ["s:b"]);
        assert!(added.is_empty() && removed.is_empty());
        assert_eq!(data["updated"][0]["description"], json!("now documented"));
    }

    #[test]
    fn a_change_of_groups_alone_is_an_update() {
        // Staff lose g-get: a and b keep their content but now list only g-all.
        let after = catalog(|c| c["policies"][1]["allowed_group_ids"] = json!(["g-all"]));
        let (added, updated, removed, data) = diff(&catalog(|_| {}), &after, "staff");
        assert_eq!(updated, ["s:a", "s:b"]);
        assert!(added.is_empty() && removed.is_empty());
        assert_eq!(data["updated"][0]["groups"], json!(["g-all"]));
    }

    #[test]
    fn removed_tools_are_listed_by_id_including_the_tail() {
        let after = catalog(|c| c["tools"][0]["method"] = json!("DELETE"));
        let (added, updated, removed, _) = diff(&catalog(|_| {}), &after, "reader");
        assert_eq!(removed, ["s:a"]);
        assert!(added.is_empty() && updated.is_empty());
        let after = catalog(|c| c["policies"][1]["active"] = json!(false));
        let (_, _, removed, data) = diff(&catalog(|_| {}), &after, "staff");
        assert_eq!(
            removed,
            ["s:a", "s:b", "s:c"],
            "revoking all access removes everything"
        );
        assert_eq!(data["count"], json!(0));
        assert_eq!(data["removed"], json!(["s:a", "s:b", "s:c"]));
    }

    #[test]
    fn event_data_has_the_documented_fields_and_etag() {
        let after = catalog(|c| c["tools"][2]["method"] = json!("GET"));
        let new_manifest = after.manifest(&claims("reader"), &ManifestOptions::default());
        let (added, _, _, data) = diff(&catalog(|_| {}), &after, "reader");
        assert_eq!(added, ["s:c"]);
        let keys: Vec<&str> = data
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            ["added", "count", "etag", "removed", "revision", "updated"]
        );
        assert_eq!(data["etag"], json!(new_manifest.etag()));
        assert_eq!(data["revision"], json!(1));
        let summary = ManifestSummary::of(&new_manifest);
        assert_eq!(&**summary.etag(), new_manifest.etag());
        assert_eq!(summary.len(), 3);
    }
}
