//! The edge tests' runtime: the committed composed component served
//! in-process by `wasmtime-wasi-http` on loopback, one fresh instance per
//! request (what `wasmtime serve` does), with a `wasi:keyvalue/store` of its
//! own, and the rmcp client helpers the tests drive it with.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};

use hyper::server::conn::http1;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use wasmtime::component::{Component, HasSelf, Linker, Resource, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::mcp::{node_listening, quickforge_cmd, scratch, write_config};

/// The component under test: exactly the committed file.
pub(super) const EDGE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/edge/dist/quickforge_edge.wasm"
);

/// The runtime's `wasi:keyvalue`, implemented here over a map shared by
/// every request of one served endpoint (what a platform's key-value store
/// is). Not `wasmtime-wasi-keyvalue` 48: its in-memory backend gives each
/// `open` a copy of its data, so a write is gone when the bucket is dropped,
/// and nothing would outlive a request.
mod kv {
    wasmtime::component::bindgen!({
        path: "wit/edge/deps/keyvalue",
        inline: "package quickforge:edge-test; world kv { import wasi:keyvalue/store@0.2.0-draft; }",
        world: "quickforge:edge-test/kv",
        with: { "wasi:keyvalue/store.bucket": super::Bucket },
    });
}

use kv::wasi::keyvalue::store;

/// The runtime's key-value data: the one bucket `""` (as in `wasmtime
/// serve -Skeyvalue`), key → value.
pub(super) type Kv = Arc<Mutex<HashMap<String, Vec<u8>>>>;

/// An open bucket: a view of the endpoint's data.
pub struct Bucket(Kv);

/// One request's store data: WASI (environment only: the configuration),
/// wasi:http and the endpoint's key-value data.
pub(super) struct Request {
    table: ResourceTable,
    wasi: WasiCtx,
    http: WasiHttpCtx,
    kv: Kv,
}

impl store::Host for Request {
    fn open(&mut self, identifier: String) -> Result<Resource<Bucket>, store::Error> {
        if !identifier.is_empty() {
            return Err(store::Error::NoSuchStore);
        }
        self.table
            .push(Bucket(self.kv.clone()))
            .map_err(|e| store::Error::Other(e.to_string()))
    }
}

impl store::HostBucket for Request {
    fn get(&mut self, b: Resource<Bucket>, key: String) -> Result<Option<Vec<u8>>, store::Error> {
        Ok(self.data(&b)?.lock().unwrap().get(&key).cloned())
    }
    fn set(
        &mut self,
        b: Resource<Bucket>,
        key: String,
        value: Vec<u8>,
    ) -> Result<(), store::Error> {
        self.data(&b)?.lock().unwrap().insert(key, value);
        Ok(())
    }
    fn delete(&mut self, b: Resource<Bucket>, key: String) -> Result<(), store::Error> {
        self.data(&b)?.lock().unwrap().remove(&key);
        Ok(())
    }
    fn exists(&mut self, b: Resource<Bucket>, key: String) -> Result<bool, store::Error> {
        Ok(self.data(&b)?.lock().unwrap().contains_key(&key))
    }
    fn list_keys(
        &mut self,
        b: Resource<Bucket>,
        _cursor: Option<u64>,
    ) -> Result<store::KeyResponse, store::Error> {
        let keys = self.data(&b)?.lock().unwrap().keys().cloned().collect();
        Ok(store::KeyResponse { keys, cursor: None })
    }
    fn drop(&mut self, b: Resource<Bucket>) -> wasmtime::Result<()> {
        self.table.delete(b)?;
        Ok(())
    }
}

impl Request {
    fn data(&self, b: &Resource<Bucket>) -> Result<Kv, store::Error> {
        self.table
            .get(b)
            .map(|bucket| bucket.0.clone())
            .map_err(|e| store::Error::Other(e.to_string()))
    }
}

impl WasiView for Request {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for Request {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: Default::default(),
        }
    }
}

/// The committed component whose stash lives in `wasi:keyvalue`.
pub(super) const EDGE_KEYVALUE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/edge/dist/quickforge_edge_keyvalue.wasm"
);

/// The engine and the pre-instantiated portable component, compiled once
/// per test binary (Cranelift takes seconds for the 6 MB component).
pub(super) fn proxy() -> &'static ProxyPre<Request> {
    static PRE: OnceLock<ProxyPre<Request>> = OnceLock::new();
    PRE.get_or_init(|| pre(EDGE))
}

/// The same for the component with `wasi:keyvalue`.
fn proxy_keyvalue() -> &'static ProxyPre<Request> {
    static PRE: OnceLock<ProxyPre<Request>> = OnceLock::new();
    PRE.get_or_init(|| pre(EDGE_KEYVALUE))
}

/// `file` compiled and linked against this runtime's WASI, `wasi:http` and
/// `wasi:keyvalue/store` (which the portable component does not import).
fn pre(file: &str) -> ProxyPre<Request> {
    {
        let engine = Engine::default();
        let component = Component::from_file(&engine, file).expect("edge/dist/ holds a component");
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).unwrap();
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker).unwrap();
        store::add_to_linker::<_, HasSelf<Request>>(&mut linker, |r| r).unwrap();
        ProxyPre::new(linker.instantiate_pre(&component).unwrap()).unwrap()
    }
}

/// Serves the portable component on a loopback port with `env` as the
/// runtime's configuration; returns its MCP URL.
pub(super) async fn serve(env: Vec<(String, String)>) -> String {
    serve_pre(proxy().clone(), env, Kv::default()).await
}

/// Serves the component with `wasi:keyvalue` with `env`, over the key-value
/// data `kv` (shared with other endpoints to stand for replicas of one
/// deployment).
pub(super) async fn serve_keyvalue(env: Vec<(String, String)>, kv: Kv) -> String {
    serve_pre(proxy_keyvalue().clone(), env, kv).await
}

async fn serve_pre(pre: ProxyPre<Request>, env: Vec<(String, String)>, kv: Kv) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let env = Arc::new(env);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (pre, env, kv) = (pre.clone(), env.clone(), kv.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let (pre, env, kv) = (pre.clone(), env.clone(), kv.clone());
                    async move {
                        handle(pre, &env, kv, req)
                            .await
                            .map_err(std::io::Error::other)
                    }
                });
                let _ = http1::Builder::new()
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    format!("http://{addr}/mcp")
}

/// A store for one request, with `env` as the runtime's configuration, the
/// endpoint's key-value data `kv` and no other capability.
pub(super) fn new_store(
    pre: &ProxyPre<Request>,
    env: &[(String, String)],
    kv: Kv,
) -> Store<Request> {
    Store::new(
        pre.engine(),
        Request {
            table: ResourceTable::new(),
            wasi: WasiCtx::builder().envs(env).inherit_stderr().build(),
            http: WasiHttpCtx::new(),
            kv,
        },
    )
}

/// One request in a fresh instance, as `wasmtime serve` runs it.
async fn handle(
    pre: ProxyPre<Request>,
    env: &[(String, String)],
    kv: Kv,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<HyperOutgoingBody>, String> {
    let mut store = new_store(&pre, env, kv);
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let req = store
        .data_mut()
        .http()
        .new_incoming_request(Scheme::Http, req)
        .map_err(|e| e.to_string())?;
    let out = store
        .data_mut()
        .http()
        .new_response_outparam(sender)
        .map_err(|e| e.to_string())?;
    let task = tokio::spawn(async move {
        let proxy = pre.instantiate_async(&mut store).await?;
        proxy
            .wasi_http_incoming_handler()
            .call_handle(&mut store, req, out)
            .await
    });
    match receiver.await {
        Ok(Ok(resp)) => Ok(resp),
        Ok(Err(e)) => Err(format!("{e:?}")),
        Err(_) => Err(format!("no response: {:?}", task.await)),
    }
}

/// The fixture over streamable HTTP, and the manifest snapshot that
/// `quickforge manifest --json` prints for it (the deploy-time step).
pub(super) async fn fixture_and_manifest(name: &str) -> (tokio::process::Child, String, String) {
    let (child, port) = node_listening(
        "fixture.mjs",
        &["--http".as_ref(), "0".as_ref()],
        "fixture: listening on ",
    )
    .await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let dir = scratch(name);
    let config = write_config(
        &dir,
        &format!("[servers.fixture]\nurl = \"{url}\"\ntimeout_secs = 20\n"),
    );
    let out = quickforge_cmd(Some(&config))
        .args(["manifest", "--json"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest = String::from_utf8(out.stdout).unwrap();
    (child, url, manifest)
}

pub(super) fn env_for(url: &str, manifest: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env = vec![
        (
            "QUICKFORGE_EDGE_SERVERS".to_string(),
            json!({"fixture": {"url": url}}).to_string(),
        ),
        ("QUICKFORGE_EDGE_MANIFEST".to_string(), manifest.to_string()),
    ];
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env
}

pub(super) type Client = rmcp::service::RunningService<rmcp::RoleClient, ()>;

pub(super) async fn connect(url: &str, token: Option<&str>) -> Result<Client, String> {
    crate::http::tls();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(t) = token {
        config = config.auth_header(t.to_string());
    }
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .map_err(|e| e.to_string())
}

/// `tools/call` of `tool` with `code`: the structured content and whether
/// it is an error.
pub(super) async fn run(client: &Client, tool: &str, code: &str) -> (Value, bool) {
    let mut args = serde_json::Map::new();
    args.insert("code".into(), code.into());
    let r = client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap();
    (
        r.structured_content.clone().unwrap_or(Value::Null),
        r.is_error == Some(true),
    )
}

pub(super) async fn ok(client: &Client, tool: &str, code: &str) -> Value {
    let (v, is_error) = run(client, tool, code).await;
    assert!(!is_error, "expected success, got {v:#}");
    v["result"].clone()
}
