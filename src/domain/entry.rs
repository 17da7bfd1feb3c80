//! One tool's manifest entry as agents see it, serialised once per snapshot (on first use) so
//! that a manifest only appends the per-request part; the snapshot keeps it, manifests read it.
//!
//! An agent may ask for fewer fields (`fields=tool_id,name,input_schema`): the entry records
//! where each field starts in its serialised prefix, so a narrowed entry is a few slices of the
//! same bytes, never a second serialisation.

use std::fmt;

use super::model::Tool;

/// The fields of a manifest entry an agent can ask for, in the order agents see them.
/// `groups` is written per manifest; every other field is part of the serialised prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    ToolId,
    Name,
    /// Only when the tool has one: a human-readable title (MCP clients show it).
    Title,
    Description,
    InputSchema,
    OutputSchema,
    SourceId,
    SourcePath,
    Method,
    Tags,
    Version,
    AvailableInStates,
    NextState,
    Groups,
}

impl Field {
    pub const ALL: [Field; 14] = [
        Field::ToolId,
        Field::Name,
        Field::Title,
        Field::Description,
        Field::InputSchema,
        Field::OutputSchema,
        Field::SourceId,
        Field::SourcePath,
        Field::Method,
        Field::Tags,
        Field::Version,
        Field::AvailableInStates,
        Field::NextState,
        Field::Groups,
    ];

    /// The fields serialised once per tool: all but `groups`.
    const PREFIX: usize = 13;

    pub fn as_str(self) -> &'static str {
        match self {
            Field::ToolId => "tool_id",
            Field::Name => "name",
            Field::Title => "title",
            Field::Description => "description",
            Field::InputSchema => "input_schema",
            Field::OutputSchema => "output_schema",
            Field::SourceId => "source_id",
            Field::SourcePath => "source_path",
            Field::Method => "method",
            Field::Tags => "tags",
            Field::Version => "version",
            Field::AvailableInStates => "available_in_states",
            Field::NextState => "next_state",
            Field::Groups => "groups",
        }
    }

    fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// Which entry fields a manifest carries. `tool_id` is always one of them: it is what an entry
/// is, what the stream's `removed` lists and what a decision names.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fields(u16);

impl Fields {
    /// Every field: the manifest of docs/semantics.md section 6, and the default.
    pub const ALL: Fields = Fields((1 << Field::ALL.len()) - 1);

    /// The fields named in `names` (`tool_id` added), or the first name that is not a field.
    pub fn parse<'n>(names: impl IntoIterator<Item = &'n str>) -> Result<Fields, UnknownField> {
        let mut fields = Fields(Field::ToolId.bit());
        for name in names {
            let field = Field::ALL
                .into_iter()
                .find(|field| field.as_str() == name)
                .ok_or_else(|| UnknownField(name.to_owned()))?;
            fields.0 |= field.bit();
        }
        Ok(fields)
    }

    pub fn contains(self, field: Field) -> bool {
        self.0 & field.bit() != 0
    }

    pub fn is_all(self) -> bool {
        self == Fields::ALL
    }

    /// The set as two bytes, for hashing into an etag.
    pub(super) fn to_le_bytes(self) -> [u8; 2] {
        self.0.to_le_bytes()
    }
}

impl Default for Fields {
    fn default() -> Self {
        Fields::ALL
    }
}

impl fmt::Debug for Fields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(
                Field::ALL
                    .into_iter()
                    .filter(|field| self.contains(*field))
                    .map(Field::as_str),
            )
            .finish()
    }
}

/// A name in `fields=` that is not an entry field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownField(pub String);

impl fmt::Display for UnknownField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}' is not a manifest entry field; expected ", self.0)?;
        for (i, field) in Field::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(field.as_str())?;
        }
        Ok(())
    }
}

/// One tool's manifest entry, serialised once per snapshot.
#[derive(Debug, Clone)]
pub struct ToolEntry {
    /// `{"tool_id":…,…,"next_state":…` — the entry without `groups` and the closing brace.
    json_prefix: Box<str>,
    /// Where each prefix field (in [`Field::ALL`] order) starts in `json_prefix`, at its key's
    /// opening quote; 0 for an optional field the tool does not have (no field starts at the
    /// prefix's `{`). A field runs to the comma before the next present field, or to the end.
    starts: [u32; Field::PREFIX],
    /// Hash of the prefix and of the tool's visibility flags.
    content_hash: [u8; 16],
    /// The visibility flags, `enabled` and `deprecated` (written in admin preview).
    flags: [u8; 2],
}

impl ToolEntry {
    pub(super) fn new(tool: &Tool) -> ToolEntry {
        let mut out = Vec::with_capacity(256);
        let mut starts = [0u32; Field::PREFIX];
        let mut field = |field: Field, value: Option<&dyn erased::Serialize>| {
            let Some(value) = value else { return };
            out.push(if out.is_empty() { b'{' } else { b',' });
            starts[field as usize] = out.len() as u32;
            out.push(b'"');
            out.extend_from_slice(field.as_str().as_bytes());
            out.extend_from_slice(b"\":");
            value.write(&mut out);
        };
        field(Field::ToolId, Some(&tool.id));
        field(Field::Name, Some(&tool.name));
        field(Field::Title, tool.title.as_ref().map(|v| v as _));
        field(Field::Description, Some(&tool.description));
        field(Field::InputSchema, Some(&*tool.input_schema));
        field(
            Field::OutputSchema,
            tool.output_schema.as_deref().map(|v| v as _),
        );
        field(Field::SourceId, Some(&tool.source_id));
        field(Field::SourcePath, Some(&tool.path.as_deref().unwrap_or("")));
        field(Field::Method, Some(&tool.method.as_deref().unwrap_or("")));
        field(Field::Tags, Some(&tool.tags));
        field(Field::Version, tool.version.as_ref().map(|v| v as _));
        field(
            Field::AvailableInStates,
            tool.available_in_states.as_ref().map(|v| v as _),
        );
        field(Field::NextState, tool.next_state.as_ref().map(|v| v as _));
        let json = String::from_utf8(out).expect("serde_json writes UTF-8 and keys are ASCII");
        let flags = [u8::from(tool.enabled), u8::from(tool.deprecated)];
        let mut hasher = blake3::Hasher::new();
        hasher.update(json.as_bytes());
        hasher.update(&flags);
        ToolEntry {
            json_prefix: json.into_boxed_str(),
            starts,
            content_hash: truncate(hasher.finalize()),
            flags,
        }
    }

    pub fn json_prefix(&self) -> &str {
        &self.json_prefix
    }

    /// Writes the entry's prefix narrowed to `fields` (`{` and the selected fields, no closing
    /// brace); all of it when `fields` is [`Fields::ALL`].
    pub(super) fn write_prefix(&self, fields: Fields, out: &mut Vec<u8>) {
        if fields.is_all() {
            out.extend_from_slice(self.json_prefix.as_bytes());
            return;
        }
        out.push(b'{');
        for (i, span) in self.selected(fields).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(span);
        }
    }

    /// The length [`ToolEntry::write_prefix`] writes for all fields (an estimate otherwise).
    pub(super) fn prefix_len(&self) -> usize {
        self.json_prefix.len()
    }

    /// Hash of the entry's content as `fields` narrow it, and of its visibility flags: equal
    /// hashes, equal entries (as an agent asking for those fields sees them).
    pub(super) fn content_hash(&self, fields: Fields) -> [u8; 16] {
        if fields.is_all() {
            return self.content_hash;
        }
        let mut hasher = blake3::Hasher::new();
        hasher.update(&fields.to_le_bytes());
        for span in self.selected(fields) {
            hasher.update(&(span.len() as u32).to_le_bytes());
            hasher.update(span);
        }
        hasher.update(&self.flags);
        truncate(hasher.finalize())
    }

    /// The `"key":value` slices of the present prefix fields that `fields` selects, in order.
    fn selected(&self, fields: Fields) -> impl Iterator<Item = &[u8]> {
        let bytes = self.json_prefix.as_bytes();
        // Each present field ends at the comma before the next present one, the last at the end.
        let mut ends = [bytes.len(); Field::PREFIX];
        let mut next = bytes.len() + 1;
        for i in (0..Field::PREFIX).rev() {
            if self.starts[i] != 0 {
                ends[i] = next - 1;
                next = self.starts[i] as usize;
            }
        }
        (0..Field::PREFIX)
            .filter(move |&i| self.starts[i] != 0 && fields.contains(Field::ALL[i]))
            .map(move |i| &bytes[self.starts[i] as usize..ends[i]])
    }
}

/// The first 128 bits of a hash: plenty to tell entries and manifests apart.
pub(super) fn truncate(hash: blake3::Hash) -> [u8; 16] {
    let mut out = [0u8; 16];
    out.copy_from_slice(&hash.as_bytes()[..16]);
    out
}

/// A value of any serialisable type behind one reference type, so that one closure can write
/// every field of an entry.
mod erased {
    pub(super) trait Serialize {
        fn write(&self, out: &mut Vec<u8>);
    }

    impl<T: serde::Serialize + ?Sized> Serialize for T {
        fn write(&self, out: &mut Vec<u8>) {
            serde_json::to_writer(out, self).expect("a tool entry field always serialises to JSON");
        }
    }
}
