//! The shape of the code, kept: no source file over 600 lines, and no function outside tests
//! over 90 lines (issue 25: files hold one idea, functions fit a screen). Lines are counted as
//! written, comments and literals included, from a function's `fn` to its closing brace.

use crate::support::source_text::{is_ident, rust_files};

use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 600;
const MAX_FUNCTION_LINES: usize = 90;

fn sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    files.sort();
    files
}

/// `text` with comments and string and character literals blanked out, line breaks kept, so
/// that braces are code and positions are the file's.
fn blanked(text: &str) -> Vec<char> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = chars.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        let end = if rest.starts_with(&['/', '/']) {
            rest.iter()
                .position(|&c| c == '\n')
                .map_or(chars.len(), |n| i + n)
        } else if rest.starts_with(&['/', '*']) {
            let mut depth = 0;
            let mut j = i;
            while j + 1 < chars.len() {
                if chars[j] == '/' && chars[j + 1] == '*' {
                    depth += 1;
                    j += 2;
                } else if chars[j] == '*' && chars[j + 1] == '/' {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            j
        } else if rest[0] == 'r'
            && (i == 0 || !is_ident(chars[i - 1]))
            && rest.get(1).is_some_and(|&c| c == '#' || c == '"')
        {
            let hashes = rest[1..].iter().take_while(|&&c| c == '#').count();
            if rest.get(1 + hashes) == Some(&'"') {
                let close: Vec<char> = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                let body = i + 2 + hashes;
                (body..chars.len())
                    .find(|&j| chars[j..].starts_with(&close))
                    .map_or(chars.len(), |j| j + close.len())
            } else {
                i + 1
            }
        } else if rest[0] == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            j + 1
        } else if rest[0] == '\'' && rest.get(1) == Some(&'\\') {
            (i + 2..chars.len())
                .find(|&j| chars[j] == '\'')
                .map_or(chars.len(), |j| j + 1)
        } else if rest[0] == '\'' && rest.get(2) == Some(&'\'') {
            i + 3
        } else {
            i + 1
        };
        if end > i + 1 || rest[0] == '"' {
            blank(&mut out, i, end.min(chars.len()));
        }
        i = end.max(i + 1);
    }
    out
}

/// `(line, name, lines)` of every function in `code` before its test module.
fn functions(code: &[char]) -> Vec<(usize, String, usize)> {
    let text: String = code.iter().collect();
    let limit = text
        .find("#[cfg(test)]\nmod ")
        .map_or(code.len(), |at| text[..at].chars().count());
    let line_of = |at: usize| code[..at].iter().filter(|&&c| c == '\n').count() + 1;
    let mut found = Vec::new();
    let mut i = 0;
    while i + 3 < limit {
        let is_fn = code[i..].starts_with(&['f', 'n', ' ']) && (i == 0 || !is_ident(code[i - 1]));
        if !is_fn {
            i += 1;
            continue;
        }
        let name: String = code[i + 3..].iter().take_while(|&&c| is_ident(c)).collect();
        let (mut depth, mut j) = (0i32, i + 3);
        while j < limit && !(depth == 0 && (code[j] == '{' || code[j] == ';')) {
            match code[j] {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                _ => {}
            }
            j += 1;
        }
        if j >= limit || code[j] == ';' {
            i = j;
            continue;
        }
        let mut braces = 0;
        let mut k = j;
        while k < code.len() {
            match code[k] {
                '{' => braces += 1,
                '}' => {
                    braces -= 1;
                    if braces == 0 {
                        break;
                    }
                }
                _ => {}
            }
            k += 1;
        }
        found.push((line_of(i), name, line_of(k) - line_of(i) + 1));
        i += 3;
    }
    found
}

#[test]
fn no_source_file_is_over_600_lines() {
    let long: Vec<String> = sources()
        .iter()
        .filter_map(|path| {
            let lines = std::fs::read_to_string(path)
                .expect("readable")
                .lines()
                .count();
            (lines > MAX_FILE_LINES).then(|| format!("{} ({lines} lines)", path.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these files by idea: {long:#?}");
}

#[test]
fn no_function_outside_tests_is_over_90_lines() {
    let mut long = Vec::new();
    for path in sources() {
        let shown = path.display().to_string();
        if shown.ends_with("tests.rs") || shown.contains("/tests/") {
            continue;
        }
        let code = blanked(&std::fs::read_to_string(&path).expect("readable"));
        for (line, name, lines) in functions(&code) {
            if lines > MAX_FUNCTION_LINES {
                long.push(format!("{shown}:{line} {name} ({lines} lines)"));
            }
        }
    }
    assert!(long.is_empty(), "split these functions: {long:#?}");
}

/// The scanner sees what it must: a long function, braces in literals and comments ignored,
/// and test modules left out.
#[test]
fn the_scanner_measures_functions_as_written() {
    let body = "    let x = 1;\n".repeat(95);
    let text = format!(
        "fn short() {{ \"{{\"; }}\n// fn fake() {{\nfn long() {{\n{body}}}\n#[cfg(test)]\nmod tests {{\n    fn in_test() {{\n{body}    }}\n}}\n"
    );
    let found = functions(&blanked(&text));
    let names: Vec<(&str, usize)> = found.iter().map(|(_, n, l)| (n.as_str(), *l)).collect();
    assert_eq!(names, [("short", 1), ("long", 97)]);
}

/// The transports' shared state stays small: each transport keeps its own state inside its
/// field (single sign-on lives in the console's), and everything else is reached through the
/// app.
#[test]
fn the_transports_shared_state_has_at_most_four_fields() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/transport/mod.rs"))
            .expect("src/transport/mod.rs");
    let body = text
        .split("pub struct AppState {")
        .nth(1)
        .and_then(|rest| rest.split("\n}").next())
        .expect("the AppState struct");
    let fields: Vec<&str> = body
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("pub ") || (line.contains(':') && !line.starts_with("//")))
        .collect();
    assert!(
        !fields.is_empty() && fields.len() <= 4,
        "AppState has {} fields: {fields:?}",
        fields.len()
    );
}
