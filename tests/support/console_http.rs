//! The admin console over plain HTTP, as a browser without script would use it: a session
//! cookie, the anti-CSRF token of the last page, forms posted from the console's origin.

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, SET_COOKIE};

use super::gateway::Gateway;

/// A client that shows redirects instead of following them.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

pub struct Browser {
    pub base: String,
    pub client: reqwest::Client,
    pub cookie: Option<String>,
    pub csrf: Option<String>,
}

pub struct Page {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub text: String,
}

impl Browser {
    pub fn new(gateway: &Gateway) -> Browser {
        Browser {
            base: gateway.base.clone(),
            client: client(),
            cookie: None,
            csrf: None,
        }
    }

    pub fn origin(&self) -> String {
        self.base.clone()
    }

    pub async fn send(&self, request: reqwest::RequestBuilder) -> Page {
        let request = match &self.cookie {
            Some(cookie) => request.header("cookie", format!("toolgate_console={cookie}")),
            None => request,
        };
        let response = request.send().await.expect("the gateway answers");
        Page {
            status: response.status(),
            headers: response.headers().clone(),
            text: response.text().await.expect("text"),
        }
    }

    pub async fn get(&mut self, path: &str) -> Page {
        let page = self
            .send(self.client.get(format!("{}{path}", self.base)))
            .await;
        if let Some(csrf) = csrf_of(&page.text) {
            self.csrf = Some(csrf);
        }
        page
    }

    pub async fn post(&self, path: &str, origin: Option<&str>, form: &[(&str, &str)]) -> Page {
        let mut request = self
            .client
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(serde_urlencoded::to_string(form).expect("form"));
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        self.send(request).await
    }

    pub async fn sign_in(&mut self, token: &str) -> Page {
        let page = self
            .post(
                "/console/sign-in",
                Some(&self.origin()),
                &[("token", token)],
            )
            .await;
        if let Some(cookie) = session_cookie(&page.headers) {
            self.cookie = Some(cookie);
        }
        page
    }
}

pub fn csrf_of(html: &str) -> Option<String> {
    let at = html.find("name=\"csrf\" value=\"")? + "name=\"csrf\" value=\"".len();
    Some(html[at..].split('"').next()?.to_owned())
}

pub fn session_cookie(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(SET_COOKIE)?.to_str().ok()?;
    let value = value.strip_prefix("toolgate_console=")?;
    Some(value.split(';').next()?.to_owned()).filter(|id| !id.is_empty())
}
