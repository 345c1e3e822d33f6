//! Defaults of the config fields that older documents may lack (serde fills them in).

pub(super) fn connect_timeout_s() -> f64 {
    10.0
}
pub(super) fn idle_timeout_s() -> f64 {
    60.0
}
pub(super) fn preflight_timeout_s() -> f64 {
    15.0
}
pub(super) fn max_event_bytes() -> u64 {
    1 << 20
}
pub(super) fn max_error_body_bytes() -> u64 {
    64 << 10
}
pub(super) fn max_generated_text_bytes() -> u64 {
    1 << 20
}
pub(super) fn yes() -> bool {
    true
}
pub(super) fn is_yes(b: &bool) -> bool {
    *b
}
pub(super) fn one() -> u32 {
    1
}
pub(super) fn is_one(n: &u32) -> bool {
    *n == 1
}
