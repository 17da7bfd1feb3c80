//! The open-file limit. Every connection is a file descriptor: with the usual soft limit of
//! 1,024, about a thousand idle connections lock every other client out (and the store, Redis
//! and the JWKS client with them). At start the soft limit is raised to the hard one, which
//! the process may do without privileges, and the default connection cap is derived from it.

/// At most this many connections by default, whatever the file limit allows: an idle
/// connection costs about 30 KiB, so this bounds their memory to a few GB. (Not lower: one
/// gateway is expected to hold tens of thousands of open SSE streams.)
pub const MAX_CONNECTIONS_CEILING: usize = 100_000;

/// Raises the soft open-file limit to the hard limit. Returns the soft limit now in force
/// (`None`: unlimited, or a platform where it is not known). A failure to raise is logged and
/// the old limit kept: the server still works, with fewer connections.
pub fn raise_soft_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let limit = getrlimit(Resource::Nofile);
        if limit.current != limit.maximum {
            let raised = Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            };
            match setrlimit(Resource::Nofile, raised) {
                Ok(()) => {
                    tracing::debug!(from = ?limit.current, to = ?limit.maximum, "raised the open-file limit");
                }
                Err(error) => {
                    tracing::warn!(
                        %error,
                        soft = ?limit.current,
                        hard = ?limit.maximum,
                        "cannot raise the open-file limit; keeping the soft limit"
                    );
                }
            }
        }
        getrlimit(Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The default cap on open connections for a soft open-file limit: seven eighths of it (the
/// rest is for the listener, the store, outbound clients and log files), at most
/// [`MAX_CONNECTIONS_CEILING`].
pub fn default_max_connections(soft_limit: Option<u64>) -> usize {
    let Some(limit) = soft_limit else {
        return MAX_CONNECTIONS_CEILING;
    };
    let share = limit - limit / 8;
    usize::try_from(share)
        .unwrap_or(usize::MAX)
        .clamp(1, MAX_CONNECTIONS_CEILING)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_cap_leaves_room_under_the_file_limit() {
        let cases = [
            ("the usual soft limit", Some(1_024), 896),
            ("a raised limit", Some(65_536), 57_344),
            ("a high limit", Some(1_048_576), MAX_CONNECTIONS_CEILING),
            ("unlimited", None, MAX_CONNECTIONS_CEILING),
            ("tiny", Some(4), 4),
            ("zero", Some(0), 1),
        ];
        for (name, limit, cap) in cases {
            assert_eq!(default_max_connections(limit), cap, "case: {name}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn the_soft_limit_is_raised_to_the_hard_limit() {
        use rustix::process::{Resource, getrlimit};
        let now = raise_soft_limit();
        let limit = getrlimit(Resource::Nofile);
        assert_eq!(now, limit.current);
        assert_eq!(limit.current, limit.maximum);
    }
}
