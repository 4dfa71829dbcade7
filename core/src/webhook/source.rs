//! Where a delivery's payload is read from: its raw body on the webhook's hot path, or a
//! `serde_json::Value` already parsed. One trait for both, so the normaliser's rules read
//! them alike (see [`super::normalise`]).

use serde::Deserialize;

/// Where the typed slices of a payload are decoded from. Each `decode` reads the whole
/// payload into `T`, so an event costs two reads: its envelope, then (when its action is
/// one Parley handles) its own fields.
pub(super) trait Source<'de> {
    fn decode<T: Deserialize<'de>>(&self) -> Result<T, String>;
}

pub(super) struct FromText<'de>(pub(super) &'de str);

impl<'de> Source<'de> for FromText<'de> {
    fn decode<T: Deserialize<'de>>(&self) -> Result<T, String> {
        serde_json::from_str(self.0).map_err(mismatch)
    }
}

pub(super) struct FromValue<'de>(pub(super) &'de serde_json::Value);

impl<'de> Source<'de> for FromValue<'de> {
    fn decode<T: Deserialize<'de>>(&self) -> Result<T, String> {
        T::deserialize(self.0).map_err(mismatch)
    }
}

fn mismatch(err: serde_json::Error) -> String {
    format!("payload does not match the event: {err}")
}
