//! How values are named in messages to the script: the engine's and the
//! natives' errors say what they got the same way.

use rquickjs::Value;

/// What `value` is, with its article, for messages ("a number", "null").
pub fn type_name(value: &Value<'_>) -> &'static str {
    if value.is_undefined() {
        "undefined"
    } else if value.is_null() {
        "null"
    } else if value.is_bool() {
        "a boolean"
    } else if value.is_number() {
        "a number"
    } else if value.is_string() {
        "a string"
    } else if value.is_array() {
        "an array"
    } else if value.is_function() {
        "a function"
    } else if value.is_object() {
        "an object"
    } else {
        "a value of another type"
    }
}
