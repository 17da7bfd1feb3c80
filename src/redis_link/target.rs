//! Which Redis a URL names: one server, a Redis Cluster, or the master a set of Sentinels
//! follows.
//!
//! - `redis://[[user]:password@]host[:port][/db]`: one server (as the `redis` crate reads it);
//! - `redis+cluster://[[user]:password@]host:port[,host:port…]`: a Redis Cluster, found from
//!   any of these seed nodes; the credentials are every node's;
//! - `redis+sentinel://[[user]:password@]host:port[,host:port…]/master-name[/db]
//!   [?sentinel_password=…[&sentinel_username=…]]`: the master the Sentinels at these addresses
//!   (26379 when no port is given) name `master-name`; the credentials are the master's, and
//!   the Sentinels are asked with `sentinel_username`/`sentinel_password` when given (Sentinels
//!   with `requirepass`).
//!
//! TLS (`rediss://`) is for a single server only.

use super::LinkError;

/// Where the gateway's Redis is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// One server: its URL.
    Single(String),
    /// A Redis Cluster: a `redis://` URL per seed node, credentials included.
    Cluster(Vec<String>),
    /// A master followed through Sentinels.
    Sentinel {
        /// A `redis://host:port` URL per Sentinel.
        sentinels: Vec<String>,
        /// The name the Sentinels know the master by.
        master: String,
        /// The master's username, password and database.
        username: Option<String>,
        password: Option<String>,
        db: i64,
    },
}

const CLUSTER: &str = "redis+cluster://";
const SENTINEL: &str = "redis+sentinel://";
const SENTINEL_PORT: u16 = 26379;
const REDIS_PORT: u16 = 6379;

impl Target {
    /// Reads `url`. Errors say what is wrong without repeating the URL (it may hold a password).
    pub fn parse(url: &str) -> Result<Target, LinkError> {
        if let Some(rest) = url.strip_prefix(CLUSTER) {
            let (credentials, hosts, path) = split(rest)?;
            if !path.is_empty() {
                return Err(LinkError::Url(
                    "a redis+cluster:// URL has no path: a cluster has one database".to_owned(),
                ));
            }
            let nodes = addresses(hosts, REDIS_PORT)?
                .into_iter()
                .map(|address| format!("redis://{credentials}{address}"))
                .collect();
            return Ok(Target::Cluster(nodes));
        }
        if let Some(rest) = url.strip_prefix(SENTINEL) {
            let sentinel_auth = sentinel_credentials(rest);
            let (credentials, hosts, path) = split(rest)?;
            let mut parts = path.split('/').filter(|part| !part.is_empty());
            let master = parts.next().ok_or_else(|| {
                LinkError::Url(
                    "a redis+sentinel:// URL names the master after the hosts: \
                     redis+sentinel://host:26379,host:26379/mymaster"
                        .to_owned(),
                )
            })?;
            let db = match parts.next() {
                None => 0,
                Some(db) => db.parse().map_err(|_| {
                    LinkError::Url(format!(
                        "what follows the master's name is not a database number (expected \
                         redis+sentinel://host:26379/mymaster[/db]){ENCODE_HINT}"
                    ))
                })?,
            };
            let (username, password) = userinfo(credentials.trim_end_matches('@'));
            let sentinels = addresses(hosts, SENTINEL_PORT)?
                .into_iter()
                .map(|address| format!("redis://{sentinel_auth}{address}"))
                .collect();
            return Ok(Target::Sentinel {
                sentinels,
                master: percent_decode(master),
                username,
                password,
                db,
            });
        }
        Ok(Target::Single(url.to_owned()))
    }
}

/// Said after every error about a URL's shape: the likely cause when the URL carries a
/// password (and no part of the URL is repeated in an error, which could be a part of it).
pub(super) const ENCODE_HINT: &str = "; a '#', '?', '/' or '@' in a user name or password must be \
     percent-encoded (%23, %3F, %2F, %40)";

/// `sentinel_username`/`sentinel_password` of the query as the userinfo of a `redis://` URL
/// (`user:password@`, still percent-encoded as given), or "".
fn sentinel_credentials(rest: &str) -> String {
    let Some((_, query)) = rest.split_once('?') else {
        return String::new();
    };
    let query = query.split('#').next().unwrap_or_default();
    let value = |name: &str| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
            .unwrap_or_default()
    };
    let (user, password) = (value("sentinel_username"), value("sentinel_password"));
    if user.is_empty() && password.is_empty() {
        String::new()
    } else {
        format!("{user}:{password}@")
    }
}

/// `[credentials@]hosts[/path][?query]` → (`credentials@` or "", hosts, path without its `/`).
fn split(rest: &str) -> Result<(&str, &str, &str), LinkError> {
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (credentials, rest) = match rest.rfind('@') {
        Some(at) => (&rest[..=at], &rest[at + 1..]),
        None => ("", rest),
    };
    let (hosts, path) = match rest.find('/') {
        Some(slash) => (&rest[..slash], &rest[slash + 1..]),
        None => (rest, ""),
    };
    if hosts.is_empty() {
        return Err(LinkError::Url(
            "no host: expected host:port[,host:port…]".to_owned(),
        ));
    }
    Ok((credentials, hosts, path))
}

/// `h1:p1,h2,[::1]:p3` → `h1:p1`, `h2:default`, `[::1]:p3`.
fn addresses(hosts: &str, default_port: u16) -> Result<Vec<String>, LinkError> {
    hosts
        .split(',')
        .map(|host| {
            let host = host.trim();
            if host.is_empty() {
                return Err(LinkError::Url(
                    "an empty host in the list of hosts".to_owned(),
                ));
            }
            let has_port = match host.rfind(':') {
                Some(colon) => !host[colon..].contains(']'),
                None => false,
            };
            if !has_port {
                return Ok(format!("{host}:{default_port}"));
            }
            let port = &host[host.rfind(':').unwrap_or_default() + 1..];
            // The text is not repeated: a password with an unencoded `#`, `?` or `/` is cut
            // there, and its rest read as a host or port.
            port.parse::<u16>().map(|_| host.to_owned()).map_err(|_| {
                LinkError::Url(format!(
                    "a host's port is not a port number (expected host:port[,host:port…]){ENCODE_HINT}"
                ))
            })
        })
        .collect()
}

/// `user:password` → the two, percent-decoded; an empty part is none.
fn userinfo(credentials: &str) -> (Option<String>, Option<String>) {
    if credentials.is_empty() {
        return (None, None);
    }
    let (user, password) = credentials.split_once(':').unwrap_or((credentials, ""));
    let some = |text: &str| (!text.is_empty()).then(|| percent_decode(text));
    (some(user), some(password))
}

fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_server_a_cluster_or_a_sentinel_master() {
        assert_eq!(
            Target::parse("redis://localhost:6379/2").expect("single"),
            Target::Single("redis://localhost:6379/2".to_owned())
        );
        assert_eq!(
            Target::parse("redis+cluster://:s%40cret@10.0.0.1:7000,10.0.0.2,[::1]:7002")
                .expect("cluster"),
            Target::Cluster(vec![
                "redis://:s%40cret@10.0.0.1:7000".to_owned(),
                "redis://:s%40cret@10.0.0.2:6379".to_owned(),
                "redis://:s%40cret@[::1]:7002".to_owned(),
            ])
        );
        assert_eq!(
            Target::parse("redis+sentinel://app:s%40cret@s1:26380,s2/my%20master/3")
                .expect("sentinel"),
            Target::Sentinel {
                sentinels: vec!["redis://s1:26380".to_owned(), "redis://s2:26379".to_owned()],
                master: "my master".to_owned(),
                username: Some("app".to_owned()),
                password: Some("s@cret".to_owned()),
                db: 3,
            }
        );
        assert_eq!(
            Target::parse("redis+sentinel://:m@s1/master?sentinel_password=p%26w").expect("auth"),
            Target::Sentinel {
                sentinels: vec!["redis://:p%26w@s1:26379".to_owned()],
                master: "master".to_owned(),
                username: None,
                password: Some("m".to_owned()),
                db: 0,
            }
        );
    }

    #[test]
    fn a_bad_url_says_what_is_wrong_without_its_password() {
        for (url, expected) in [
            ("redis+sentinel://:pw@s1:26379", "names the master"),
            ("redis+sentinel://:pw@s1:26379/m/x", "not a database number"),
            ("redis+cluster://:pw@a:7000/1", "has no path"),
            ("redis+cluster://:pw@a:x", "not a port number"),
            ("redis+cluster://:s3cr3tPW#x@a:7000", "not a port number"),
            ("redis+cluster://:s3cr3tPW?x@a:7000", "not a port number"),
            (
                "redis+sentinel://:pw@s1/m/s3cr3tPW",
                "not a database number",
            ),
            ("redis+cluster://:pw@a:7000,,b:7001", "an empty host"),
            ("redis+cluster://:pw@", "no host"),
        ] {
            let error = Target::parse(url).expect_err(url).to_string();
            assert!(error.contains(expected), "{url}: {error}");
            assert!(!error.contains("pw"), "{url}: {error}");
            assert!(!error.contains("s3cr3t"), "{url}: {error}");
            assert!(!error.contains("PW"), "{url}: {error}");
        }
    }
}
