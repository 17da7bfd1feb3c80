//! The MCP protocol revisions this endpoint speaks.

/// A protocol revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    /// Sessions, `initialize`, the GET notification stream.
    V2025_06_18,
    /// As 2025-06-18, plus stream resumption priming and SSE polling.
    V2025_11_25,
    /// Stateless: no `initialize`, no session; `server/discover`, `subscriptions/listen`.
    V2026_07_28,
}

impl Version {
    /// Every revision, oldest first.
    pub const ALL: [Version; 3] = [
        Version::V2025_06_18,
        Version::V2025_11_25,
        Version::V2026_07_28,
    ];

    /// The newest revision with sessions, offered to an `initialize` asking for one this
    /// server does not know.
    pub const NEWEST_WITH_SESSIONS: Version = Version::V2025_11_25;

    pub fn parse(text: &str) -> Option<Version> {
        Version::ALL
            .into_iter()
            .find(|version| version.as_str() == text)
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Version::V2025_06_18 => "2025-06-18",
            Version::V2025_11_25 => "2025-11-25",
            Version::V2026_07_28 => "2026-07-28",
        }
    }

    /// Whether requests of this revision carry everything themselves (no session).
    pub const fn is_stateless(self) -> bool {
        matches!(self, Version::V2026_07_28)
    }

    /// The revisions, comma-separated, for error messages.
    pub fn supported() -> String {
        Version::ALL.map(Version::as_str).join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_parse_and_print_alike() {
        for version in Version::ALL {
            assert_eq!(Version::parse(version.as_str()), Some(version));
        }
        assert_eq!(Version::parse("2025-03-26"), None);
        assert_eq!(Version::parse(""), None);
        assert_eq!(Version::supported(), "2025-06-18, 2025-11-25, 2026-07-28");
        assert!(Version::V2026_07_28.is_stateless());
        assert!(!Version::NEWEST_WITH_SESSIONS.is_stateless());
    }
}
