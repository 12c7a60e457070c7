//! Reading an HTTP client's error (reqwest, hyper) for a message or a log line.

/// An error's causes, outermost first. reqwest's own message only says what it was doing
/// ("error sending request for url (…)", the URL the caller names anyway); its sources say what
/// happened ("tcp connect error: Connection refused"), so it is used only when it has none.
pub fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let Some(first) = error.source() else {
        return error.to_string();
    };
    let mut parts = vec![first.to_string()];
    let mut source = first.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}
