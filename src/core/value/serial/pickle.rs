//! (being written)

use crate::core::value::Value;

/// The value, or `None` when the bytes hold something outside the JSON-like subset.
pub(crate) fn decode(_bytes: &[u8]) -> Option<Value> {
    None
}

/// The value's bytes in this format; `Err` names what the format cannot hold.
pub(crate) fn encode(value: &Value) -> Result<Vec<u8>, String> {
    Err(format!("{} values are not written yet", value.kind()))
}
