//! A small server-sent-events client for the tests: reads the response body as it arrives and
//! parses it into events and comments (the WHATWG event-stream format, the subset we send).

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use super::gateway::{Gateway, Reply};

/// One parsed item of the stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Event(Event),
    /// A comment line (`: ping`), without the colon and leading space.
    Comment(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: Option<String>,
    pub event: String,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("event data is not JSON ({e}): {}", self.data))
    }

    /// The `tool_id`s of the entries under `field` (`data`, `added`, `updated`).
    pub fn ids(&self, field: &str) -> Vec<String> {
        self.json()[field]
            .as_array()
            .unwrap_or_else(|| panic!("no array '{field}' in {}", self.data))
            .iter()
            .map(|entry| {
                entry
                    .get("tool_id")
                    .unwrap_or(entry)
                    .as_str()
                    .expect("id")
                    .to_owned()
            })
            .collect()
    }
}

/// What waiting for the next item found.
#[derive(Debug)]
pub enum Next {
    Item(Item),
    /// The server ended the stream.
    End,
    TimedOut,
}

/// An open stream.
pub struct SseClient {
    response: reqwest::Response,
    buffer: Vec<u8>,
    pub headers: reqwest::header::HeaderMap,
}

impl SseClient {
    /// Opens `path` with `token`; an error status comes back as the whole reply.
    pub async fn open(
        gateway: &Gateway,
        path: &str,
        token: &str,
        last_event_id: Option<&str>,
    ) -> Result<SseClient, Reply> {
        let url = format!("{}{}", gateway.base, path);
        SseClient::open_url(&gateway.client, &url, token, last_event_id).await
    }

    /// [`SseClient::open`] for any server (a gateway process, another instance).
    pub async fn open_url(
        client: &reqwest::Client,
        url: &str,
        token: &str,
        last_event_id: Option<&str>,
    ) -> Result<SseClient, Reply> {
        let mut request = client
            .get(url)
            .bearer_auth(token)
            .header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = request.send().await.expect("request reaches the gateway");
        if response.status() != StatusCode::OK {
            return Err(Reply {
                status: response.status(),
                headers: response.headers().clone(),
                body: response.bytes().await.expect("body").to_vec(),
            });
        }
        Ok(SseClient {
            headers: response.headers().clone(),
            response,
            buffer: Vec::new(),
        })
    }

    /// A stream answered to a request made elsewhere (a POST whose answer is a stream).
    pub fn from_response(response: reqwest::Response) -> SseClient {
        SseClient {
            headers: response.headers().clone(),
            response,
            buffer: Vec::new(),
        }
    }

    /// [`SseClient::open`] that must succeed.
    pub async fn connect(gateway: &Gateway, path: &str, token: &str) -> SseClient {
        match SseClient::open(gateway, path, token, None).await {
            Ok(client) => client,
            Err(reply) => panic!(
                "stream refused with {}: {}",
                reply.status,
                String::from_utf8_lossy(&reply.body)
            ),
        }
    }

    /// The next event or comment within `within`.
    pub async fn next(&mut self, within: Duration) -> Next {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(item) = self.parse_one() {
                return Next::Item(item);
            }
            match tokio::time::timeout_at(deadline, self.response.chunk()).await {
                Err(_) => return Next::TimedOut,
                Ok(Ok(Some(chunk))) => self.buffer.extend_from_slice(&chunk),
                Ok(Ok(None)) | Ok(Err(_)) => return Next::End,
            }
        }
    }

    /// The next event (comments skipped); panics on timeout or end of stream.
    pub async fn event(&mut self, within: Duration) -> Event {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next(left).await {
                Next::Item(Item::Event(event)) => return event,
                Next::Item(Item::Comment(_)) => continue,
                other => panic!("expected an event within {within:?}, got {other:?}"),
            }
        }
    }

    /// Asserts that no event arrives within `within` (comments are fine).
    pub async fn no_event(&mut self, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next(left).await {
                Next::TimedOut => return,
                Next::Item(Item::Comment(_)) => continue,
                other => panic!("expected no event, got {other:?}"),
            }
        }
    }

    /// Takes one complete item (ending in a blank line) off the buffer.
    fn parse_one(&mut self) -> Option<Item> {
        loop {
            let end = self.buffer.windows(2).position(|w| w == b"\n\n")?;
            let block: Vec<u8> = self.buffer.drain(..end + 2).collect();
            let text = String::from_utf8(block).expect("the stream is UTF-8");
            let mut event = Event {
                id: None,
                event: "message".to_owned(),
                data: String::new(),
            };
            let mut has_data = false;
            let mut comment = None;
            for line in text.lines() {
                if let Some(rest) = line.strip_prefix(':') {
                    comment = Some(rest.trim_start().to_owned());
                    continue;
                }
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "id" => event.id = Some(value.to_owned()),
                    "event" => event.event = value.to_owned(),
                    "data" => {
                        if has_data {
                            event.data.push('\n');
                        }
                        event.data.push_str(value);
                        has_data = true;
                    }
                    _ => {}
                }
            }
            if has_data {
                return Some(Item::Event(event));
            }
            if let Some(comment) = comment {
                return Some(Item::Comment(comment));
            }
        }
    }
}
