//! Where every fake listens: 127.0.0.1, on a port the system picks, served by a task of
//! the test's runtime. One way for all of them, so a fake is its routes and nothing more.

use axum::Router;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A listener on 127.0.0.1 and its `http://` URL: for a server that must know its own
/// address before it is built (the fake GitHub writes it into the links it serves).
pub async fn listen(what: &str) -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|err| panic!("bind {what}: {err}"));
    let url = format!(
        "http://{}",
        listener.local_addr().expect("a bound listener's address")
    );
    (listener, url)
}

/// Serve `app` on `listener` for as long as the test runs.
pub fn serve(listener: TcpListener, app: Router) -> JoinHandle<()> {
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    })
}

/// `app` served on a port of its own; its `http://` URL.
pub async fn start(what: &str, app: Router) -> String {
    let (listener, url) = listen(what).await;
    serve(listener, app);
    url
}
