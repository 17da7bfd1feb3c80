//! Where the JWKS document comes from: an `http(s)://` URL, a `file://` URL or a file path.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use reqwest::{Client, Url};

use super::{AuthSetupError, JwksError};

/// JWKS documents are a few KiB; anything far larger is a misconfiguration or an attack.
const MAX_JWKS_BYTES: usize = 1024 * 1024;
/// A fetch holds up callers that wait for an unknown `kid`, so it must give up quickly.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// A place to read the JWKS from.
#[derive(Debug, Clone)]
pub(crate) enum JwksSource {
    /// Fetched with GET; the client is built once and reused.
    Http { url: Url, client: Client },
    /// Read from the local file system, e.g. a mounted secret.
    File(PathBuf),
}

impl JwksSource {
    /// Interprets the configured `TOOLGATE_JWKS_URL` value.
    pub(super) fn parse(value: &str) -> Result<Self, AuthSetupError> {
        let invalid = |reason: String| AuthSetupError::InvalidJwksSource {
            value: value.to_owned(),
            reason,
        };
        let trimmed = value.trim();
        if trimmed.is_empty() {
            return Err(invalid("it is empty".into()));
        }
        let Some((scheme, _)) = trimmed.split_once("://") else {
            return Ok(Self::File(PathBuf::from(trimmed)));
        };
        let url = Url::parse(trimmed).map_err(|error| invalid(error.to_string()))?;
        match scheme.to_ascii_lowercase().as_str() {
            "http" | "https" => {
                let client = Client::builder()
                    .timeout(FETCH_TIMEOUT)
                    .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(AuthSetupError::HttpClient)?;
                Ok(Self::Http { url, client })
            }
            "file" => url
                .to_file_path()
                .map(Self::File)
                .map_err(|()| invalid("the file:// URL does not name a local path".into())),
            other => Err(invalid(format!("unsupported scheme {other:?}"))),
        }
    }

    /// Reads the raw document, refusing anything over the size limit.
    pub(super) async fn fetch(&self) -> Result<Vec<u8>, JwksError> {
        let too_large = JwksError::TooLarge {
            limit: MAX_JWKS_BYTES,
        };
        match self {
            Self::File(path) => {
                let body = tokio::fs::read(path).await?;
                if body.len() > MAX_JWKS_BYTES {
                    return Err(too_large);
                }
                Ok(body)
            }
            Self::Http { url, client } => {
                let http = |error: reqwest::Error| JwksError::Http(why(&error.without_url()));
                let mut response = client
                    .get(url.clone())
                    .header(
                        reqwest::header::ACCEPT,
                        "application/json, application/jwk-set+json",
                    )
                    .send()
                    .await
                    .map_err(http)?;
                if !response.status().is_success() {
                    return Err(JwksError::Status(response.status().as_u16()));
                }
                if response
                    .content_length()
                    .is_some_and(|len| len > MAX_JWKS_BYTES as u64)
                {
                    return Err(too_large);
                }
                let mut body = Vec::new();
                while let Some(chunk) = response.chunk().await.map_err(http)? {
                    if body.len() + chunk.len() > MAX_JWKS_BYTES {
                        return Err(too_large);
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(body)
            }
        }
    }
}

/// For logs: the URL without credentials or query (which may carry API keys), or the path.
impl fmt::Display for JwksSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Http { url, .. } => {
                let host = url.host_str().unwrap_or_default();
                match url.port() {
                    Some(port) => write!(f, "{}://{host}:{port}{}", url.scheme(), url.path()),
                    None => write!(f, "{}://{host}{}", url.scheme(), url.path()),
                }
            }
        }
    }
}

/// Why a request failed, in words that tell a timeout from a refused connection or a TLS
/// failure: reqwest's error and every cause under it.
fn why(error: &reqwest::Error) -> String {
    let mut causes = vec![error.to_string()];
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !causes.iter().any(|known| known.contains(&text)) {
            causes.push(text);
        }
        source = cause.source();
    }
    let kind = if error.is_timeout() {
        "timed out: "
    } else if error.is_connect() {
        "could not connect: "
    } else {
        ""
    };
    format!("{kind}{}", causes.join(": "))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn parses_the_three_kinds_of_location() {
        let http = JwksSource::parse("https://idp.example/jwks.json").expect("https URL");
        assert!(matches!(http, JwksSource::Http { .. }));
        let http = JwksSource::parse("HTTP://127.0.0.1:8080/jwks").expect("http URL");
        assert!(matches!(http, JwksSource::Http { .. }));

        let file_url = JwksSource::parse("file:///etc/toolgate/jwks%20a.json").expect("file URL");
        let expected = Path::new("/etc/toolgate/jwks a.json");
        assert!(matches!(file_url, JwksSource::File(path) if path == expected));
        let path = JwksSource::parse("config/jwks.json").expect("relative path");
        assert!(matches!(path, JwksSource::File(path) if path == Path::new("config/jwks.json")));
    }

    #[test]
    fn refuses_unusable_locations() {
        for value in [
            "",
            "   ",
            "ftp://idp.example/jwks",
            "https://",
            "file://remote-host/jwks.json",
        ] {
            let result = JwksSource::parse(value);
            assert!(
                matches!(result, Err(AuthSetupError::InvalidJwksSource { .. })),
                "{value:?}: {result:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_failed_fetch_says_why() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let url = format!("http://{}/jwks", closed.local_addr().expect("address"));
        drop(closed);
        let source = JwksSource::parse(&url).expect("URL");
        let error = source
            .fetch()
            .await
            .expect_err("nothing listens")
            .to_string();
        assert!(error.contains("could not connect"), "{error}");
        assert!(error.to_lowercase().contains("refused"), "{error}");
    }

    #[test]
    fn display_hides_credentials_and_query() {
        let source =
            JwksSource::parse("https://user:pw@idp.example:8443/jwks?api_key=k").expect("URL");
        assert_eq!(source.to_string(), "https://idp.example:8443/jwks");
    }
}
