//! One call to GitHub as data: which identity, what to send, and what came back. Shared
//! by the client (which builds calls) and the transport (which sends them), so that
//! neither needs the other's module for the shapes alone.

use crate::retry::Replay;
use reqwest::header::HeaderMap;
use reqwest::{Method, Url};

/// Which identity a call uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Auth {
    /// The App JWT: `GET /app`, minting tokens.
    App,
    /// The installation's access token: everything on a repository.
    Installation(u64),
}

pub(crate) struct Call {
    pub(crate) method: Method,
    pub(crate) url: Url,
    pub(crate) auth: Auth,
    /// Serialised once, so a retry sends the very same bytes.
    pub(crate) body: Option<Vec<u8>>,
    pub(crate) replay: Replay,
}

impl Call {
    /// A GET: no body, and safe to send again whatever happened to the first attempt.
    pub(crate) fn get(url: Url, auth: Auth) -> Call {
        Call {
            method: Method::GET,
            url,
            auth,
            body: None,
            replay: Replay::Safe,
        }
    }
}

pub(crate) struct Reply {
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}
