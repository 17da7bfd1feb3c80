//! A remote MCP server over Streamable HTTP → tools.
//!
//! One session ([`McpSession`]: the handshake, then requests over Streamable HTTP) lists the
//! tools page by page (`tools/list`, `nextCursor`) and is ended with a DELETE at the end (best
//! effort).
//!
//! Each tool keeps its `inputSchema` and `outputSchema` verbatim; `method` is `MCP`, `path` is
//! `mcp://{source name}/{tool name}`, and the behaviour hints of its annotations become tags
//! (`readOnlyHint` → `read-only`, `destructiveHint` → `destructive`, `idempotentHint` →
//! `idempotent`, `openWorldHint` → `open-world`) so that selectors can use them.
//!
//! Hints take the defaults the MCP specification gives them, which fail closed for the two
//! that matter to access: a tool that does not say `destructiveHint: false` is tagged
//! `destructive`, one that does not say `openWorldHint: false` is tagged `open-world`, so
//! `excluded_tags: ["destructive"]` excludes every tool that did not promise otherwise
//! (docs/semantics.md section 9). `read-only` and `idempotent` need an explicit `true`. A hint that
//! is not a boolean counts as absent.

use std::sync::Arc;

use serde_json::{Value, json};

mod session;

pub use session::{McpError, McpReply, McpSession};

use crate::ingest::{
    FETCH_TIMEOUT, Import, ImportIssue, ImportedTool, IngestError, MAX_FETCH_BYTES, client,
};

pub use session::PROTOCOL_VERSION;

/// The most `tools/list` pages followed (a server that keeps returning cursors is cut off).
const MAX_PAGES: usize = 100;

/// The most bytes of tools one listing brings, across all its pages (each page is also read
/// within [`MAX_FETCH_BYTES`]): the whole listing is kept in memory and in the catalog, so
/// 100 pages of 16 MiB must not be.
pub const MAX_LISTING_BYTES: usize = 16 * 1024 * 1024;

/// The most bytes of one tool's definition (its JSON as the server sent it): bigger than any
/// real tool's; one that is bigger is skipped and reported, not imported.
pub const MAX_TOOL_BYTES: usize = 256 * 1024;

/// Annotation hints that become tags, with the value MCP says to assume when a hint is absent.
pub const HINT_TAGS: [(&str, &str, bool); 4] = [
    ("readOnlyHint", "read-only", false),
    ("destructiveHint", "destructive", true),
    ("idempotentHint", "idempotent", false),
    ("openWorldHint", "open-world", true),
];

/// Lists the tools of the MCP server at `url`: what it defines, and the tools skipped for
/// their size ([`MAX_TOOL_BYTES`]).
pub async fn list_tools(
    source_name: &str,
    url: &str,
    headers: &[(String, String)],
) -> Result<Import, IngestError> {
    let mut session = McpSession::new(client()?, url, headers, FETCH_TIMEOUT, MAX_FETCH_BYTES)
        .map_err(ingest_error)?;
    let result = list_all(&mut session).await;
    session.close().await;
    let (instructions, tools, issues) = result.map_err(ingest_error)?;
    let tools = tools
        .iter()
        .map(|tool| {
            let mut imported = tool_from_mcp(source_name, tool)?;
            imported.definition = Arc::new(definition(tool, instructions.as_ref()));
            Ok(imported)
        })
        .collect::<Result<_, IngestError>>()?;
    Ok(Import { tools, issues })
}

/// The size of `value` as JSON, without writing it anywhere.
fn json_size(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a Value to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// The tools of one page kept, within the listing's bound (`listed`: the bytes kept so far):
/// a tool past [`MAX_TOOL_BYTES`] becomes an issue; a listing past [`MAX_LISTING_BYTES`] is
/// refused whole (part of a listing would take tools away that the server still defines).
///
/// Each tool's definition holds the server's `instructions` too, so each tool is charged
/// their size (`instructions_size`) besides its own.
fn keep_page(
    page_tools: &[Value],
    instructions_size: usize,
    listed: &mut usize,
    tools: &mut Vec<Value>,
    issues: &mut Vec<ImportIssue>,
) -> Result<(), McpError> {
    for tool in page_tools {
        let size = json_size(tool);
        if size > MAX_TOOL_BYTES {
            let name = tool.get("name").and_then(Value::as_str);
            let shown: String = name.unwrap_or("?").chars().take(200).collect();
            issues.push(ImportIssue::skipped(
                format!("tools/list {shown}"),
                name.map(|n| n.chars().take(200).collect::<String>()).as_deref(),
                format!(
                    "the tool's definition is {size} bytes, more than the {MAX_TOOL_BYTES} a tool may have"
                ),
            ));
            continue;
        }
        *listed += size + instructions_size;
        if *listed > MAX_LISTING_BYTES {
            return Err(McpError::TooLarge(format!(
                "the MCP server's tools/list holds more than {MAX_LISTING_BYTES} bytes of tools across its pages; nothing was imported"
            )));
        }
        tools.push(tool.clone());
    }
    Ok(())
}

/// A tool's definition (`crate::domain::definition`): the upstream's whole tool object, and the
/// server's `instructions` (which every client puts before the model too).
pub fn definition(tool: &Value, instructions: Option<&Value>) -> Value {
    let mut definition = serde_json::Map::new();
    definition.insert("tool".to_owned(), tool.clone());
    if let Some(instructions) = instructions {
        definition.insert("instructions".to_owned(), instructions.clone());
    }
    Value::Object(definition)
}

/// Converts one entry of a `tools/list` result (its definition without server instructions).
pub fn tool_from_mcp(source_name: &str, tool: &Value) -> Result<ImportedTool, IngestError> {
    let name = tool
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| IngestError::Definition(format!("an MCP tool without a name: {tool}")))?;
    let text = |key: &str| {
        tool.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let description = text("description")
        .or_else(|| text("title"))
        .or_else(|| {
            tool.pointer("/annotations/title")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        })
        .map_or_else(|| format!("MCP tool {name}"), str::to_owned);
    let input_schema = match tool.get("inputSchema") {
        Some(schema @ Value::Object(_)) => Arc::new(schema.clone()),
        _ => {
            return Err(IngestError::Definition(format!(
                "MCP tool '{name}' has no inputSchema object"
            )));
        }
    };
    let output_schema = tool
        .get("outputSchema")
        .filter(|s| s.is_object())
        .map(|s| Arc::new(s.clone()));
    let tags = HINT_TAGS
        .iter()
        .filter(|(hint, _, default)| {
            tool.get("annotations")
                .and_then(|annotations| annotations.get(hint))
                .and_then(Value::as_bool)
                .unwrap_or(*default)
        })
        .map(|(_, tag, _)| (*tag).to_owned())
        .collect();
    Ok(ImportedTool {
        operation_id: name.to_owned(),
        name: name.to_owned(),
        title: crate::ingest::title(
            tool.get("title")
                .or_else(|| tool.pointer("/annotations/title"))
                .and_then(Value::as_str),
        ),
        description,
        method: "MCP".to_owned(),
        path: format!("mcp://{source_name}/{name}"),
        tags,
        input_schema,
        output_schema,
        deprecated: false,
        definition: Arc::new(definition(tool, None)),
        schemas_apart: false,
    })
}

/// An MCP client error as an import error: the config's faults are the admin's to fix (422),
/// an unreachable or failing server is the upstream's (502), an answer that is not a usable
/// definition is a definition error (502).
fn ingest_error(error: McpError) -> IngestError {
    match error {
        McpError::Config(message) => IngestError::NotImportable(message),
        McpError::Send { message, .. }
        | McpError::Status { message, .. }
        | McpError::Read { message, .. }
        | McpError::Rpc { message, .. } => IngestError::Upstream(message),
        McpError::TooLarge(message) | McpError::Invalid(message) => {
            IngestError::Definition(message)
        }
    }
}

/// The handshake, then every page of `tools/list`: the server's `instructions` (when it gives
/// some), the tools, and the tools skipped for their size.
async fn list_all(
    session: &mut McpSession,
) -> Result<(Option<Value>, Vec<Value>, Vec<ImportIssue>), McpError> {
    let instructions = session
        .initialize()
        .await?
        .get("instructions")
        .filter(|instructions| !instructions.is_null())
        .cloned();
    let instructions_size = instructions.as_ref().map_or(0, json_size);
    if instructions_size > MAX_TOOL_BYTES {
        return Err(McpError::TooLarge(format!(
            "the MCP server's instructions are {instructions_size} bytes, more than the {MAX_TOOL_BYTES} they may have (they are part of every tool's definition); nothing was imported"
        )));
    }
    let mut tools = Vec::new();
    let mut issues = Vec::new();
    let mut listed = 0;
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page = session.request("tools/list", params).await?.result;
        match page.get("tools") {
            Some(Value::Array(page_tools)) => {
                keep_page(
                    page_tools,
                    instructions_size,
                    &mut listed,
                    &mut tools,
                    &mut issues,
                )?;
            }
            _ => {
                return Err(McpError::Invalid(
                    "the MCP server's tools/list result has no 'tools' array".to_owned(),
                ));
            }
        }
        cursor = page
            .get("nextCursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        if cursor.is_none() {
            return Ok((instructions, tools, issues));
        }
    }
    Err(McpError::Invalid(format!(
        "the MCP server's tools/list went on for more than {MAX_PAGES} pages"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_become_tags_and_schemas_stay_verbatim() {
        let tool = tool_from_mcp(
            "files",
            &json!({"name": "read", "description": "Read a file",
                    "inputSchema": {"type": "object", "properties": {"p": {"type": "string"}}, "x-extra": 1},
                    "annotations": {"readOnlyHint": true, "destructiveHint": false, "openWorldHint": true}}),
        )
        .expect("a tool");
        assert_eq!(tool.path, "mcp://files/read");
        assert_eq!(tool.method, "MCP");
        assert_eq!(tool.tags, ["read-only", "open-world"]);
        assert_eq!(
            *tool.input_schema,
            json!({"type": "object", "properties": {"p": {"type": "string"}}, "x-extra": 1})
        );
    }

    #[test]
    fn the_title_is_the_tools_else_its_annotations() {
        let title = |tool: Value| {
            let mut tool = tool;
            tool["name"] = json!("t");
            tool["inputSchema"] = json!({"type": "object"});
            tool_from_mcp("s", &tool).expect("a tool").title
        };
        assert_eq!(
            title(json!({"title": "Read file", "annotations": {"title": "Other"}})),
            Some("Read file".into())
        );
        assert_eq!(
            title(json!({"annotations": {"title": "Read\na file"}})),
            Some("Read a file".into())
        );
        assert_eq!(title(json!({"title": ""})), None);
        assert_eq!(title(json!({})), None);
    }

    #[test]
    fn absent_hints_take_the_defaults_that_fail_closed() {
        let tags = |annotations: Option<Value>| {
            let mut tool = json!({"name": "t", "inputSchema": {"type": "object"}});
            if let Some(annotations) = annotations {
                tool["annotations"] = annotations;
            }
            tool_from_mcp("s", &tool).expect("a tool").tags
        };
        assert_eq!(tags(None), ["destructive", "open-world"]);
        assert_eq!(tags(Some(json!({}))), ["destructive", "open-world"]);
        assert_eq!(
            tags(Some(json!({"readOnlyHint": true}))),
            ["read-only", "destructive", "open-world"],
            "no promise about destruction: assumed destructive, as MCP says"
        );
        assert_eq!(
            tags(Some(
                json!({"destructiveHint": "no", "openWorldHint": null})
            )),
            ["destructive", "open-world"],
            "a hint that is not a boolean counts as absent"
        );
        assert_eq!(
            tags(Some(json!({"readOnlyHint": true, "destructiveHint": false,
                              "idempotentHint": true, "openWorldHint": false}))),
            ["read-only", "idempotent"]
        );
    }
}
