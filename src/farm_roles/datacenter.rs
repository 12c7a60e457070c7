//! `farm-datacenter`: the origin behind the farm's WAN link. It stores every content and
//! serves whatever the farm cannot: a user's request the farm lost (`GET /c/C`), a replica
//! copied to a server after a real loss (`/copy/C`), the farm's initial contents (`/fill/C`),
//! each at the WAN link's pace, and each only with a ticket of the dispatcher's key
//! (`super::tickets`), so that nobody outside the farm adds to what it counts. The key comes
//! in [`DataCenterRequest::Key`], at the start and again when the dispatcher's samples find
//! the data center without one (started anew), with a floor below which a loss's ticket is
//! refused, so one taken before a restart is not good again. It counts requests and bytes of
//! each kind for the dispatcher ([`DataCenterRequest::Measure`]), the only node it answers on
//! the control plane.

use super::config::DataCenterConfig;
use super::messages::{DataCenterRequest, DataCenterResponse, DataCenterUsage};
use super::tickets::{self, Spent};
use super::{content_of, payload};
use crate::control::Callers;
use crate::roles::control::load_identity;
use crate::roles::env::NodeEnv;
use crate::roles::http::any_address;
use crate::roles::http::semantics::{self as http, error};
use crate::roles::http::{spawn_http, Body, ServeOptions};
use crate::roles::tokens::TokenKey;
use hyper::{Request, Response, StatusCode};
use std::future::Future;
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Admission {
    key: Option<TokenKey>,
    users: Spent,
}

struct DataCenter {
    config: DataCenterConfig,
    /// This node's name, which the tickets it takes are made for.
    node: String,
    /// The dispatcher's key, once it came, and the users' tickets taken under it.
    admission: Mutex<Admission>,
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
        if let Err(refusal) = self.admit(request, kind, content) {
            return refusal.response();
        }
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

    /// Whether `request` for `/KIND/CONTENT` carries a ticket of the dispatcher's key for
    /// it; a user's (a loss's) is taken, so it is good for one GET.
    fn admit(
        &self,
        request: &Request<hyper::body::Incoming>,
        kind: &str,
        content: u32,
    ) -> Result<(), tickets::NoTicket> {
        let mut admission = self.admission.lock().unwrap_or_else(|e| e.into_inner());
        let query = request.uri().query();
        let id = tickets::check(admission.key.as_ref(), &self.node, kind, content, query)?;
        if kind == "c" && request.method() == hyper::Method::GET {
            admission.users.take(id)?;
        }
        Ok(())
    }

    fn control(&self, request: DataCenterRequest) -> DataCenterResponse {
        match request {
            DataCenterRequest::Key { ticket_key, floor } => {
                *self.admission.lock().unwrap_or_else(|e| e.into_inner()) = Admission {
                    key: Some(TokenKey::from_bytes(ticket_key)),
                    users: Spent::above(floor),
                };
                DataCenterResponse::Keyed
            }
            DataCenterRequest::Measure => DataCenterResponse::Usage {
                usage: (self.usage.lock().unwrap_or_else(|e| e.into_inner())).clone(),
                keyed: (self.admission.lock().unwrap_or_else(|e| e.into_inner()))
                    .key
                    .is_some(),
            },
        }
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
        node: env.node_name(),
        admission: Mutex::default(),
        usage: Mutex::new(DataCenterUsage::default()),
    });
    let for_control = center.clone();
    let control = crate::control::serve(
        any_address(config.control_port),
        &identity,
        Callers::only("farm data center", [config.dispatcher.clone()]),
        move |_peer, request: DataCenterRequest| {
            let center = for_control.clone();
            async move { center.control(request) }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::farm_roles::tickets::ticketed_path;

    /// The data center serves only requests with a ticket of the dispatcher's key for it, and
    /// counts only those: none is served before the key came, neither a request without a
    /// ticket nor one with a ticket for another node, kind or content is served or counted,
    /// and a loss's ticket is good for one request, also after the data center is keyed again.
    #[tokio::test]
    async fn only_the_farms_requests_are_served_and_counted() {
        let center = Arc::new(DataCenter {
            config: DataCenterConfig {
                dispatcher: "dispatcher".into(),
                contents: 10,
                object_size: 100,
                port: 1,
                control_port: 1,
            },
            node: "dc".into(),
            admission: Mutex::default(),
            usage: Mutex::new(DataCenterUsage::default()),
        });
        let serving = center.clone();
        let handler = move |request: Request<hyper::body::Incoming>| {
            let center = serving.clone();
            async move { center.handle(&request) }
        };
        let options = ServeOptions {
            role: "farm-datacenter",
            access_log: false,
        };
        let running = spawn_http("127.0.0.1:0".parse().unwrap(), handler, options, None)
            .await
            .unwrap();
        let status =
            |path: String| crate::testing::status_of(format!("http://{}{path}", running.http));
        let key = TokenKey::generate().unwrap();
        let copy = ticketed_path(&key, "dc", "copy", 5, 1);
        assert_eq!(status(copy.clone()).await, StatusCode::SERVICE_UNAVAILABLE);
        let unkeyed = center.control(DataCenterRequest::Measure);
        assert!(matches!(
            unkeyed,
            DataCenterResponse::Usage { keyed: false, .. }
        ));
        let keyed = center.control(DataCenterRequest::Key {
            ticket_key: key.bytes(),
            floor: 0,
        });
        assert_eq!(keyed, DataCenterResponse::Keyed);
        let other = TokenKey::generate().unwrap();
        // Another request's ticket on `/copy/5`.
        let on_copy = |path: String| format!("/copy/5?{}", path.split_once('?').unwrap().1);
        for (what, path) in [
            ("none", "/copy/5".to_string()),
            ("another node's", ticketed_path(&key, "s1", "copy", 5, 1)),
            (
                "another kind's",
                on_copy(ticketed_path(&key, "dc", "fill", 5, 1)),
            ),
            (
                "another content's",
                on_copy(ticketed_path(&key, "dc", "copy", 6, 1)),
            ),
            ("another key's", ticketed_path(&other, "dc", "copy", 5, 1)),
        ] {
            assert_eq!(status(path).await, StatusCode::FORBIDDEN, "{what}");
        }
        assert_eq!(status(copy).await, StatusCode::OK);
        let user = ticketed_path(&key, "dc", "c", 9, 2);
        assert_eq!(status(user.clone()).await, StatusCode::OK);
        let again = status(user).await;
        assert_eq!(
            again,
            StatusCode::SERVICE_UNAVAILABLE,
            "a loss's ticket twice"
        );
        let DataCenterResponse::Usage { usage, keyed } = center.control(DataCenterRequest::Measure)
        else {
            panic!("no usage")
        };
        assert!(keyed);
        let expected = DataCenterUsage {
            user_requests: 1,
            user_bytes: 100,
            copy_requests: 1,
            copy_bytes: 100,
            ..DataCenterUsage::default()
        };
        assert_eq!(usage, expected);
        // Keyed again, as one started again is, with the dispatcher's next ticket as floor:
        // the loss's ticket it took before is not good again, a later one is.
        let rekeyed = center.control(DataCenterRequest::Key {
            ticket_key: key.bytes(),
            floor: 3,
        });
        assert_eq!(rekeyed, DataCenterResponse::Keyed);
        let before = ticketed_path(&key, "dc", "c", 9, 2);
        assert_eq!(status(before).await, StatusCode::SERVICE_UNAVAILABLE);
        let after = ticketed_path(&key, "dc", "c", 9, 3);
        assert_eq!(status(after).await, StatusCode::OK);
        running.stop().await.unwrap();
    }
}
