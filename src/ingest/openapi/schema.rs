//! One OpenAPI schema made agent-facing and self-contained.
//!
//! `$ref`s are resolved at every depth, **local ones only** (`#/...`): a remote reference is
//! an error of the operation that uses it and is never fetched (a document must not make the
//! gateway request arbitrary URLs).
//!
//! A schema is first expanded **inline** (what agents read best). Inlining is exponential in
//! the worst case (a schema referring ten times to one referring ten times to …), so past
//! [`INLINE_NODES`] the schema is expanded again with **every** reference put once into the
//! schema's own `$defs` and referred to as `#/$defs/<Name>`: that form is never larger than the
//! part of the document the schema reaches. A reference cycle (a tree, a linked list) goes to
//! `$defs` in both forms, so recursive schemas stay bounded. Past [`MAX_SCHEMA_NODES`] even in
//! that form the schema is refused ([`SchemaError::TooLarge`]).
//!
//! Agent-facing means: OpenAPI 3.0 `nullable: true` becomes JSON Schema (`type: [T, "null"]`,
//! or `anyOf` with `{"type": "null"}` when there is no `type`), and `x-*` extensions and
//! `example`/`examples` are dropped (they cost tokens and say nothing about what is valid).
//! Names under `properties` (and the like) and values under `enum`, `const`, `default` are
//! data: kept exactly.

mod rewrite;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Instant;

use serde_json::{Map, Value, json};

use self::rewrite::{agent_facing, merge_all_of, nullable};

/// Nodes up to which a schema is inlined; a larger one is expanded with shared `$defs`.
pub(super) const INLINE_NODES: usize = 20_000;
/// The most nodes one schema may have in its `$defs` form (guards against reference bombs).
pub(super) const MAX_SCHEMA_NODES: usize = 100_000;

/// Why a schema could not be expanded.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum SchemaError {
    /// Over the node limit of the current form.
    TooLarge,
    /// The budget of the whole import (work or time) is spent: the text says which.
    ImportBudget(String),
    /// A reference that cannot be followed: the text says which and why.
    Invalid(String),
}

impl SchemaError {
    /// The reason reported for the operation (`part` is "input" or "output").
    pub(super) fn reason(&self, part: &str) -> String {
        match self {
            SchemaError::TooLarge => format!(
                "the {part} schema has more than {MAX_SCHEMA_NODES} nodes even with its $refs shared in $defs"
            ),
            SchemaError::ImportBudget(reason) => reason.clone(),
            SchemaError::Invalid(reason) => format!("the {part} schema: {reason}"),
        }
    }
}

/// The bound on one whole import: schema nodes expanded (work, inlining attempts included)
/// and a deadline. Shared by every schema of the document.
///
/// It also remembers the references found too large to inline (their expansion alone took at
/// least half of [`INLINE_NODES`]), so that the hundred operations that use one such schema
/// do not each try to inline it first.
#[derive(Debug)]
pub(super) struct ImportBudget {
    work_left: Cell<usize>,
    deadline: Instant,
    max_work: usize,
    large: RefCell<HashSet<String>>,
}

impl ImportBudget {
    pub(super) fn new(max_work: usize, deadline: Instant) -> ImportBudget {
        ImportBudget {
            work_left: Cell::new(max_work),
            deadline,
            max_work,
            large: RefCell::new(HashSet::new()),
        }
    }

    /// Takes one node of work; the reason when the budget is spent.
    fn take(&self) -> Result<(), SchemaError> {
        let left = self.work_left.get();
        if left == 0 {
            return Err(self.spent_reason());
        }
        self.work_left.set(left - 1);
        // Reading the clock is cheaper than a node, but not free: every 4096 nodes.
        if left.is_multiple_of(4096) && Instant::now() > self.deadline {
            self.work_left.set(0);
            return Err(self.spent_reason());
        }
        Ok(())
    }

    /// Whether nothing more can be expanded.
    pub(super) fn spent(&self) -> bool {
        self.work_left.get() == 0 || Instant::now() > self.deadline
    }

    /// Why operations are skipped once the budget is spent.
    pub(super) fn spent_reason(&self) -> SchemaError {
        SchemaError::ImportBudget(if self.work_left.get() == 0 {
            format!(
                "not imported: the document's schemas expand to more than {} nodes in all",
                self.max_work
            )
        } else {
            "not imported: the import took longer than its time limit".to_owned()
        })
    }
}

/// Resolves local references in one document.
pub(super) struct Resolver<'d> {
    pub root: &'d Value,
}

impl<'d> Resolver<'d> {
    /// The object `value` stands for, following `$ref`s (of path items, parameters, bodies,
    /// responses) until one is not a reference.
    pub(super) fn follow(
        &self,
        value: &'d Value,
        at: &str,
    ) -> Result<&'d Map<String, Value>, String> {
        let mut current = value;
        for _ in 0..32 {
            match current {
                Value::Object(map) => match map.get("$ref").and_then(Value::as_str) {
                    Some(reference) => current = self.target(reference)?,
                    None => return Ok(map),
                },
                _ => return Err(format!("{at} is not an object")),
            }
        }
        Err(format!("{at}: a chain of more than 32 $refs"))
    }

    /// What a local `$ref` points at.
    pub(super) fn target(&self, reference: &str) -> Result<&'d Value, String> {
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(format!(
                "remote $ref '{reference}' is not followed: only local references ('#/...') are resolved"
            ));
        };
        self.root
            .pointer(&percent_decode(pointer))
            .ok_or_else(|| format!("$ref '{reference}' points at nothing"))
    }
}

/// Builds one self-contained schema with `build`, which expands its parts through the
/// [`Expansion`] it is given: inline first, with shared `$defs` when that is too large.
/// Returns the schema and its node count.
pub(super) fn expand_with<F>(
    resolver: &Resolver<'_>,
    budget: &ImportBudget,
    build: F,
) -> Result<(Value, usize), SchemaError>
where
    F: Fn(&mut Expansion<'_, '_>) -> Result<Value, SchemaError>,
{
    if budget.spent() {
        return Err(budget.spent_reason());
    }
    for (mode, limit) in [(Mode::Inline, INLINE_NODES), (Mode::Defs, MAX_SCHEMA_NODES)] {
        let mut expansion = Expansion {
            resolver,
            budget,
            mode,
            limit,
            nodes: 0,
            names: HashMap::new(),
            taken: BTreeSet::new(),
            pending: Vec::new(),
        };
        match build(&mut expansion).and_then(|schema| expansion.finish(schema)) {
            Err(SchemaError::TooLarge) if mode == Mode::Inline => continue,
            result => return result,
        }
    }
    Err(SchemaError::TooLarge)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// References inlined, cycles in `$defs`.
    Inline,
    /// Every reference in `$defs`.
    Defs,
}

/// The state of expanding one schema: the definitions it needs in `$defs`.
pub(super) struct Expansion<'r, 'd> {
    resolver: &'r Resolver<'d>,
    budget: &'r ImportBudget,
    mode: Mode,
    limit: usize,
    nodes: usize,
    /// `$ref` → name in `$defs`.
    names: HashMap<String, String>,
    taken: BTreeSet<String>,
    pending: Vec<String>,
}

/// Keys whose value maps names (not keywords) to schemas.
const NAMED_SCHEMAS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// Keys whose value is data, never a schema.
const DATA: [&str; 6] = ["enum", "const", "default", "required", "type", "format"];

impl Expansion<'_, '_> {
    fn count(&mut self, nodes: usize) -> Result<(), SchemaError> {
        self.nodes += nodes;
        if self.nodes > self.limit {
            return Err(SchemaError::TooLarge);
        }
        self.budget.take()
    }

    /// The expansion of one schema (a document's schema object, or a boolean schema).
    pub(super) fn schema(&mut self, value: &Value) -> Result<Value, SchemaError> {
        self.expand(value, &mut Vec::new())
    }

    fn expand(&mut self, value: &Value, stack: &mut Vec<String>) -> Result<Value, SchemaError> {
        self.count(1)?;
        let Value::Object(map) = value else {
            return Ok(value.clone());
        };
        // `$recursiveRef: "#"` (2019-09, OpenAI's CompoundFilter) means the nearest enclosing
        // schema with `$recursiveAnchor: true`; inlined, "#" would mean the tool's own root.
        if let Some(recursive) = map.get("$recursiveRef") {
            let anchor = stack.iter().rev().find(|reference| {
                self.resolver
                    .target(reference)
                    .is_ok_and(|t| t.get("$recursiveAnchor") == Some(&Value::Bool(true)))
            });
            let Some(anchor) = anchor.filter(|_| recursive == "#") else {
                return Err(SchemaError::Invalid(format!(
                    "$recursiveRef {recursive} has no enclosing $recursiveAnchor to refer to"
                )));
            };
            let mut local = map.clone();
            local.remove("$recursiveRef");
            local.insert("$ref".to_owned(), Value::String(anchor.clone()));
            return self.expand(&Value::Object(local), stack);
        }
        let mut out = if let Some(Value::String(reference)) = map.get("$ref") {
            let target = self
                .resolver
                .target(reference)
                .map_err(SchemaError::Invalid)?;
            let resolved = if self.mode == Mode::Defs || stack.contains(reference) {
                json!({"$ref": format!("#/$defs/{}", self.def_name(reference))})
            } else if self.budget.large.borrow().contains(reference) {
                return Err(SchemaError::TooLarge);
            } else {
                let start = self.nodes;
                stack.push(reference.clone());
                let resolved = self.expand(target, stack);
                stack.pop();
                if resolved == Err(SchemaError::TooLarge) && self.nodes - start >= INLINE_NODES / 2
                {
                    self.budget.large.borrow_mut().insert(reference.clone());
                }
                resolved?
            };
            match resolved {
                Value::Object(resolved) => resolved,
                // A boolean schema: keywords beside it have nothing to refine.
                other => return Ok(other),
            }
        } else {
            Map::new()
        };
        // Beside a `$ref` (3.1 allows it: a description), keywords refine the target.
        for (key, child) in map {
            if key == "$ref" || !agent_facing(key) {
                continue;
            }
            let child = self.keyword(key, child, stack)?;
            out.insert(key.clone(), child);
        }
        Ok(Value::Object(nullable(merge_all_of(out))))
    }

    fn keyword(
        &mut self,
        key: &str,
        child: &Value,
        stack: &mut Vec<String>,
    ) -> Result<Value, SchemaError> {
        if DATA.contains(&key) {
            self.count(1 + child.as_array().map_or(0, Vec::len))?;
            return Ok(child.clone());
        }
        match child {
            Value::Object(named) if NAMED_SCHEMAS.contains(&key) => {
                let mut out = Map::new();
                for (name, schema) in named {
                    out.insert(name.clone(), self.expand(schema, stack)?);
                }
                Ok(Value::Object(out))
            }
            Value::Array(items) => items
                .iter()
                .map(|item| self.expand(item, stack))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            _ => self.expand(child, stack),
        }
    }

    fn def_name(&mut self, reference: &str) -> String {
        if let Some(name) = self.names.get(reference) {
            return name.clone();
        }
        // The name is a JSON Pointer token inside a URI fragment: keep it to characters that
        // need no escaping in either.
        let base: String = reference
            .rsplit('/')
            .next()
            .map(|last| percent_decode(last).replace("~1", "_").replace("~0", "_"))
            .unwrap_or_default()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "_-.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let base = if base.is_empty() {
            "def".to_owned()
        } else {
            base
        };
        let mut name = base.clone();
        let mut n = 2;
        while self.taken.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        self.names.insert(reference.to_owned(), name.clone());
        self.pending.push(reference.to_owned());
        name
    }

    /// Expands the definitions referred to, puts them under `$defs` of `schema`, and returns
    /// it with its node count.
    fn finish(&mut self, mut schema: Value) -> Result<(Value, usize), SchemaError> {
        let mut defs = Map::new();
        while let Some(reference) = self.pending.pop() {
            let target = self
                .resolver
                .target(&reference)
                .map_err(SchemaError::Invalid)?;
            let mut stack = vec![reference.clone()];
            let expanded = self.expand(target, &mut stack)?;
            defs.insert(self.names[&reference].clone(), expanded);
        }
        if !defs.is_empty() {
            let Value::Object(object) = &mut schema else {
                return Err(SchemaError::Invalid(
                    "a boolean schema cannot hold $defs".to_owned(),
                ));
            };
            let entry = object
                .entry("$defs")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(existing) = entry {
                existing.extend(defs);
            }
        }
        Ok((schema, self.nodes))
    }
}

fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .map_or_else(|_| text.to_owned(), |decoded| decoded.into_owned())
}

#[cfg(test)]
mod tests;
