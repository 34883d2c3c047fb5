//! An axum service backed by the async client: `GET /cache/{key}` and `PUT /cache/{key}`.
//!
//!     cargo run --features async --example axum_service -- --servers "127.0.0.1:11211 1" [--listen 127.0.0.1:3000]
//!
//!     curl -X PUT --data-binary 'hello' http://127.0.0.1:3000/cache/greeting   # 204
//!     curl http://127.0.0.1:3000/cache/greeting                                # 200 hello
//!     curl -i http://127.0.0.1:3000/cache/absent                               # 404
//!
//! A key memcached cannot take (spaces, control bytes, over 250 bytes) is a 400 and never
//! reaches a server; a value over the item size is a 413; a server that is down or too slow
//! is a 503 (its keys only: the other servers' keys keep working).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use memshard::Expiry;
use memshard::aio::Client;
use memshard::{Error, StoreOutcome};
use std::time::Duration;

fn status(e: &Error) -> StatusCode {
    match e {
        Error::InvalidKey { .. } => StatusCode::BAD_REQUEST,
        Error::ValueTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        e if e.is_server_failure() || matches!(e, Error::ServerDown { .. }) => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        _ => StatusCode::BAD_GATEWAY,
    }
}

fn error(e: Error) -> Response {
    (status(&e), format!("{e}\n")).into_response()
}

async fn get_key(State(client): State<Client>, Path(key): Path<String>) -> Response {
    match client.get(&key).await {
        Ok(Some(item)) => (StatusCode::OK, item.value).into_response(),
        Ok(None) => StatusCode::NOT_FOUND.into_response(),
        Err(e) => error(e),
    }
}

async fn put_key(State(client): State<Client>, Path(key): Path<String>, body: Bytes) -> Response {
    match client.set(&key, &body, Expiry::NEVER).await {
        Ok(StoreOutcome::Stored) => StatusCode::NO_CONTENT.into_response(),
        Ok(other) => (StatusCode::CONFLICT, format!("{other:?}\n")).into_response(),
        Err(e) => error(e),
    }
}

/// The service: usable on its own (tests, other binaries) with any client.
pub fn app(client: Client) -> Router {
    Router::new()
        .route("/cache/{key}", get(get_key).put(put_key))
        .with_state(client)
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let servers = arg("--servers").unwrap_or_else(|| "127.0.0.1:11211 1".into());
    let listen = arg("--listen").unwrap_or_else(|| "127.0.0.1:3000".into());
    let client = Client::builder()
        .server_list(&servers.replace(',', "\n"))?
        .pool_size(16)
        .read_timeout(Duration::from_millis(250))
        .build()?;
    let listener = tokio::net::TcpListener::bind(&listen).await?;
    eprintln!("listening on http://{listen}, cache on {servers}");
    axum::serve(listener, app(client)).await?;
    Ok(())
}
