//! The one client of Fastly's API that `wrctl` has: `wrctl control`'s writes
//! ([`crate::sink::FastlyApi`]) and `wrctl rotate`/`revoke` go through it, with
//! one timeout, one user agent, and one way of answering: the body of a success,
//! or the status and the start of the body, never with the token in it.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::budget::Answer;
use crate::usage::usage_error;

/// The environment variable the Fastly API token is read from (never a flag or a file).
pub const TOKEN_VAR: &str = "FASTLY_API_TOKEN";

/// How long one write to the Fastly API may take, connection included.
pub const API_TIMEOUT: Duration = Duration::from_secs(10);

/// A client of the API at one base address, with one token.
pub struct Client {
    agent: ureq::Agent,
    base: String,
    token: String,
}

impl Client {
    /// A client of the API at `base` (no trailing slash needed), authenticated
    /// with `token`.
    pub fn new(base: &str, token: String) -> Client {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(API_TIMEOUT))
            .http_status_as_error(false)
            .user_agent(concat!("wrctl/", env!("CARGO_PKG_VERSION")))
            .build();
        Client {
            agent: config.into(),
            base: base.trim_end_matches('/').to_string(),
            token,
        }
    }

    /// The address of config store `store`'s items.
    pub fn items_url(&self, store: &str) -> String {
        format!("{}/resources/stores/config/{store}/items", self.base)
    }

    /// `PATCH /resources/stores/config/ID/items` with `body`, a batch of upserts.
    pub fn patch_items(&self, store: &str, body: String) -> Result<(), String> {
        self.patch_items_answered(store, body).0
    }

    /// [`Client::patch_items`], with the answer's status and rate-limit headers
    /// (`Fastly-RateLimit-Remaining`, `Fastly-RateLimit-Reset`, `Retry-After`).
    pub fn patch_items_answered(&self, store: &str, body: String) -> (Result<(), String>, Answer) {
        let response = self
            .agent
            .patch(&self.items_url(store))
            .header("Fastly-Key", &self.token)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .send(body);
        let mut answer = Answer::default();
        if let Ok(response) = &response {
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
            };
            answer = Answer {
                status: Some(response.status().as_u16()),
                remaining: header("Fastly-RateLimit-Remaining"),
                reset: header("Fastly-RateLimit-Reset"),
                // Only the delta-seconds form; an HTTP date is left to the back-off.
                retry_after: header("Retry-After"),
            };
        }
        (self.answer(response).map(drop), answer)
    }

    /// One upsert of `key` = `value` in config store `store`.
    pub fn upsert_item(&self, store: &str, key: &str, value: &str) -> Result<(), String> {
        let body =
            json!({"items": [{"op": "upsert", "item_key": key, "item_value": value}]}).to_string();
        self.patch_items(store, body)
    }

    /// The config store's items: `GET /resources/stores/config/ID/items`.
    pub fn config_items(
        &self,
        store: &str,
    ) -> Result<std::collections::HashMap<String, String>, String> {
        let response = self
            .agent
            .get(&self.items_url(store))
            .header("Fastly-Key", &self.token)
            .header("Accept", "application/json")
            .call();
        let body = self.answer(response)?;
        let items: Value = serde_json::from_str(&body)
            .map_err(|e| format!("the config store's items are not JSON: {e}"))?;
        let items = items
            .as_array()
            .ok_or("the config store's items are not a JSON array")?;
        Ok(items
            .iter()
            .filter_map(|item| {
                Some((
                    item.get("item_key")?.as_str()?.to_string(),
                    item.get("item_value")?.as_str()?.to_string(),
                ))
            })
            .collect())
    }

    /// `POST /resources/stores/secret/ID/secrets` with `{"name", "secret": base64}`.
    pub fn create_secret(&self, store: &str, name: &str, secret: &str) -> Result<(), String> {
        let url = format!("{}/resources/stores/secret/{store}/secrets", self.base);
        let body = json!({"name": name, "secret": STANDARD.encode(secret)}).to_string();
        let response = self
            .agent
            .post(&url)
            .header("Fastly-Key", &self.token)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .send(body);
        self.answer(response).map(drop)
    }

    /// `DELETE /resources/stores/secret/ID/secrets/NAME`.
    pub fn delete_secret(&self, store: &str, name: &str) -> Result<(), String> {
        let url = format!(
            "{}/resources/stores/secret/{store}/secrets/{name}",
            self.base
        );
        let response = self
            .agent
            .delete(&url)
            .header("Fastly-Key", &self.token)
            .header("Accept", "application/json")
            .call();
        self.answer(response).map(drop)
    }

    /// The body of a successful answer, or what went wrong (never with the token).
    fn answer(
        &self,
        response: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<String, String> {
        let mut response =
            response.map_err(|e| self.redact(format!("Fastly API request failed: {e}")))?;
        let status = response.status();
        let body = response
            .body_mut()
            .with_config()
            .limit(1 << 20)
            .read_to_string()
            .unwrap_or_default();
        if status.is_success() {
            return Ok(body);
        }
        let body: String = body.chars().take(300).collect();
        Err(self.redact(format!(
            "Fastly API answered {status}: {}",
            body.trim().replace(['\n', '\r'], " ")
        )))
    }

    /// Never lets the token into a message.
    fn redact(&self, message: String) -> String {
        if self.token.is_empty() {
            message
        } else {
            message.replace(&self.token, "[token]")
        }
    }
}

/// A client of the API at `base` with the token from `FASTLY_API_TOKEN`; without
/// one, a usage error (exit 2).
pub fn api_from_env(base: &str) -> Client {
    match std::env::var(TOKEN_VAR) {
        Ok(token) if !token.trim().is_empty() => Client::new(base, token),
        _ => usage_error(&format!(
            "the Fastly API token must be in the environment variable {TOKEN_VAR}"
        )),
    }
}
