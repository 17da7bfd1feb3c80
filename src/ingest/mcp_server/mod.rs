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
//! (SEMANTICS.md section 9). `read-only` and `idempotent` need an explicit `true`. A hint that
//! is not a boolean counts as absent.

use std::sync::Arc;

use serde_json::{Value, json};

mod session;

pub use session::{McpError, McpReply, McpSession};

use crate::ingest::{FETCH_TIMEOUT, ImportedTool, IngestError, MAX_FETCH_BYTES, client};

pub use session::PROTOCOL_VERSION;

/// The most `tools/list` pages followed (a server that keeps returning cursors is cut off).
const MAX_PAGES: usize = 100;

/// Annotation hints that become tags, with the value MCP says to assume when a hint is absent.
pub const HINT_TAGS: [(&str, &str, bool); 4] = [
    ("readOnlyHint", "read-only", false),
    ("destructiveHint", "destructive", true),
    ("idempotentHint", "idempotent", false),
    ("openWorldHint", "open-world", true),
];

/// Lists the tools of the MCP server at `url`.
pub async fn list_tools(
    source_name: &str,
    url: &str,
    headers: &[(String, String)],
) -> Result<Vec<ImportedTool>, IngestError> {
    let mut session = McpSession::new(client()?, url, headers, FETCH_TIMEOUT, MAX_FETCH_BYTES)
        .map_err(ingest_error)?;
    let result = list_all(&mut session).await;
    session.close().await;
    let (instructions, tools) = result.map_err(ingest_error)?;
    tools
        .iter()
        .map(|tool| {
            let mut imported = tool_from_mcp(source_name, tool)?;
            imported.definition = Arc::new(definition(tool, instructions.as_ref()));
            Ok(imported)
        })
        .collect()
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
/// some) and the tools.
async fn list_all(session: &mut McpSession) -> Result<(Option<Value>, Vec<Value>), McpError> {
    let instructions = session
        .initialize()
        .await?
        .get("instructions")
        .filter(|instructions| !instructions.is_null())
        .cloned();
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page = session.request("tools/list", params).await?.result;
        match page.get("tools") {
            Some(Value::Array(page_tools)) => tools.extend(page_tools.iter().cloned()),
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
            return Ok((instructions, tools));
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
