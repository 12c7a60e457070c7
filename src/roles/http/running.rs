//! A role's HTTP server running in the background: started by `spawn_http`, stopped by
//! `Running::stop` or when the role's shutdown signal arrives (`Running::run_until`).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::head_only::HeadHandler;
use super::serve::{serve_head_only, serve_http, ServeOptions, MAX_CONNECTIONS};
use super::Body;
use crate::control::ServerHandle;
use crate::roles::Shutdown;

/// A role server running in the background.
pub struct Running {
    /// Where HTTP listens (the real port when bound to port 0).
    pub http: SocketAddr,
    /// Where the control service listens, for the dRR and dCS.
    pub control: Option<SocketAddr>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<io::Result<()>>,
    /// Where a task of the role beside the server says the role cannot go on
    /// ([`Running::failing_on`]).
    failure: Option<oneshot::Receiver<String>>,
}

impl Running {
    /// The role ends with the error a task of it sends on `failure` (a misconfiguration only
    /// a peer can reveal, say): [`Running::run_until`] then stops the server and returns it.
    /// A `failure` whose sender goes away without a word ends nothing.
    pub fn failing_on(mut self, failure: oneshot::Receiver<String>) -> Running {
        self.failure = Some(failure);
        self
    }

    /// Stops accepting, drains in-flight requests (bounded), closes the control service.
    pub async fn stop(self) -> Result<(), String> {
        let _ = self.stop.send(());
        join(self.task).await
    }

    /// Runs until `shutdown` resolves (then stops gracefully), the server fails, or a task
    /// of the role sends a failure ([`Running::failing_on`]; the server is stopped, and the
    /// failure returned).
    pub async fn run_until(mut self, shutdown: impl Future<Output = ()>) -> Result<(), String> {
        let failure = self.failure.take();
        let failed = async move {
            match failure {
                Some(failure) => match failure.await {
                    Ok(why) => why,
                    Err(_) => std::future::pending().await,
                },
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = shutdown => self.stop().await,
            finished = &mut self.task => join_result(finished),
            why = failed => {
                let stopped = self.stop().await;
                Err(stopped.err().map_or(why.clone(), |e| format!("{why} (and stopping: {e})")))
            }
        }
    }
}

async fn join(task: JoinHandle<io::Result<()>>) -> Result<(), String> {
    join_result(task.await)
}

fn join_result(result: Result<io::Result<()>, tokio::task::JoinError>) -> Result<(), String> {
    match result {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("HTTP server: {e}")),
        Err(e) => Err(format!("HTTP server task: {e}")),
    }
}

/// Listens on `http` and serves `handler` in a task; `control` (if any) lives as long.
pub async fn spawn_http<H, Fut>(
    http: SocketAddr,
    handler: H,
    options: ServeOptions,
    control: Option<ServerHandle>,
) -> Result<Running, String>
where
    H: Fn(hyper::Request<hyper::body::Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = hyper::Response<Body>> + Send + 'static,
{
    spawn_server(http, control, move |listener, stopped| {
        serve_http(listener, handler, options, MAX_CONNECTIONS, stopped)
    })
    .await
}

/// `spawn_http` for a handler answering from the request head alone (`serve_head_only`).
pub async fn spawn_head_only<H: HeadHandler>(
    http: SocketAddr,
    handler: Arc<H>,
    options: ServeOptions,
    control: Option<ServerHandle>,
) -> Result<Running, String> {
    spawn_server(http, control, move |listener, stopped| {
        serve_head_only(listener, handler, options, stopped)
    })
    .await
}

/// Listens on `http` and runs `serve` on the listener in a task until `Running` stops it.
async fn spawn_server<S, Fut>(
    http: SocketAddr,
    control: Option<ServerHandle>,
    serve: S,
) -> Result<Running, String>
where
    S: FnOnce(TcpListener, Stopped) -> Fut,
    Fut: Future<Output = io::Result<()>> + Send + 'static,
{
    let listener = TcpListener::bind(http)
        .await
        .map_err(|e| format!("listening for HTTP on {http}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let control_addr = control.as_ref().map(ServerHandle::local_addr);
    let (stop, stopped) = oneshot::channel::<()>();
    let served = serve(listener, Stopped(stopped));
    let task = tokio::spawn(async move {
        let result = served.await;
        drop(control);
        result
    });
    Ok(Running {
        http: local,
        control: control_addr,
        stop,
        task,
        failure: None,
    })
}

/// Resolves when `Running` asks its server to stop (or is dropped).
struct Stopped(oneshot::Receiver<()>);

impl Future for Stopped {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx).map(|_| ())
    }
}

/// Waits for `starting` (a role may take a while before it serves: an exchange, a
/// registration) and runs what it started until `shutdown`; a shutdown while starting ends
/// the role at once.
pub async fn serve_until_stopped(
    mut shutdown: Shutdown,
    starting: impl Future<Output = Result<Running, String>>,
) -> Result<(), String> {
    let running = tokio::select! {
        running = starting => running?,
        () = &mut shutdown => return Ok(()),
    };
    running.run_until(shutdown).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roles::http::semantics::error;

    /// A task's failure ends the role with it, the server stopped; a failure sender that goes
    /// away without a word ends nothing.
    #[tokio::test]
    async fn a_failure_sent_by_a_task_ends_the_role_with_it() {
        let serve = || async {
            let handler = |_: hyper::Request<hyper::body::Incoming>| async {
                error(hyper::StatusCode::OK, "")
            };
            let options = ServeOptions {
                role: "test",
                access_log: false,
            };
            spawn_http("127.0.0.1:0".parse().unwrap(), handler, options, None)
                .await
                .unwrap()
        };
        let (fail, failure) = oneshot::channel();
        let running = serve().await.failing_on(failure);
        let addr = running.http;
        fail.send("the cloud refused it".to_string()).unwrap();
        let ended = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            running.run_until(std::future::pending()),
        );
        assert_eq!(
            ended.await.unwrap(),
            Err("the cloud refused it".to_string())
        );
        assert!(
            tokio::net::TcpStream::connect(addr).await.is_err(),
            "still serving"
        );
        let (quiet, failure) = oneshot::channel::<String>();
        drop(quiet);
        let running = serve().await.failing_on(failure);
        let (stop, stopped) = oneshot::channel::<()>();
        let run = tokio::spawn(running.run_until(async {
            let _ = stopped.await;
        }));
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(!run.is_finished(), "ended by a failure nobody sent");
        stop.send(()).unwrap();
        assert_eq!(run.await.unwrap(), Ok(()));
    }
}
