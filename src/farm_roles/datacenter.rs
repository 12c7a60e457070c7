//! `farm-datacenter`: the origin behind the farm's WAN link. It stores every content and
//! serves whatever the farm cannot: a user's request the farm lost (`GET /c/C`), a replica
//! copied to a server after a real loss (`/copy/C`), the farm's initial contents (`/fill/C`),
//! each at the WAN link's pace. It counts requests and bytes of each kind for the dispatcher
//! ([`DataCenterRequest::Measure`]), the only node it answers on the control plane.

use super::config::DataCenterConfig;
use super::messages::{DataCenterRequest, DataCenterUsage};
use super::{content_of, payload};
use crate::control::Callers;
use crate::roles::control::load_identity;
use crate::roles::env::NodeEnv;
use crate::roles::http::any_address;
use crate::roles::http::semantics::{self as http, error};
use crate::roles::http::{spawn_http, Body, ServeOptions};
use hyper::{Request, Response, StatusCode};
use std::future::Future;
use std::sync::{Arc, Mutex};

struct DataCenter {
    config: DataCenterConfig,
    usage: Mutex<DataCenterUsage>,
}

impl DataCenter {
    fn handle(&self, request: &Request<hyper::body::Incoming>) -> Response<Body> {
        if let Some(refusal) = http::refuse_method(request.method()) {
            return refusal;
        }
        let path = request.uri().path();
        let Some((kind, content)) = ["c", "copy", "fill"]
            .iter()
            .find_map(|kind| Some((*kind, content_of(path, kind, self.config.contents)?)))
        else {
            return error(StatusCode::NOT_FOUND, "no such content");
        };
        let size = self.config.object_size;
        // A HEAD sends no bytes: only GETs are the data center's load.
        if request.method() == hyper::Method::GET {
            let mut guard = self.usage.lock().unwrap_or_else(|e| e.into_inner());
            let usage = &mut *guard;
            let (requests, bytes) = match kind {
                "c" => (&mut usage.user_requests, &mut usage.user_bytes),
                "copy" => (&mut usage.copy_requests, &mut usage.copy_bytes),
                _ => (&mut usage.fill_requests, &mut usage.fill_bytes),
            };
            *requests += 1;
            *bytes += size;
        }
        http::payload(payload(content), size)
    }
}

pub async fn run(
    config: DataCenterConfig,
    env: NodeEnv,
    shutdown: impl Future<Output = ()>,
) -> Result<(), String> {
    let identity = load_identity(&env)?;
    let center = Arc::new(DataCenter {
        config: config.clone(),
        usage: Mutex::new(DataCenterUsage::default()),
    });
    let for_control = center.clone();
    let control = crate::control::serve(
        any_address(config.control_port),
        &identity,
        Callers::only("farm data center", [config.dispatcher.clone()]),
        move |_peer, request: DataCenterRequest| {
            let center = for_control.clone();
            async move {
                match request {
                    DataCenterRequest::Measure => center
                        .usage
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .clone(),
                }
            }
        },
    )
    .await
    .map_err(|e| e.to_string())?;
    tracing::info!(
        "farm-datacenter {}: {} contents of {} bytes",
        env.node_name(),
        config.contents,
        config.object_size
    );
    let handler = move |request: Request<hyper::body::Incoming>| {
        let center = center.clone();
        async move { center.handle(&request) }
    };
    let options = ServeOptions {
        role: "farm-datacenter",
        access_log: false,
    };
    spawn_http(any_address(config.port), handler, options, Some(control))
        .await?
        .run_until(shutdown)
        .await
}
