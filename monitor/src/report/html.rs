//! The report page: a fixed HTML skeleton with inline CSS and JavaScript,
//! and the report's data as one JSON blob that the script renders. Nothing
//! is loaded from the network.

use super::Report;

const PAGE: &str = include_str!("page.html");
const CSS: &str = include_str!("page.css");
const JS: &str = include_str!("page.js");

/// Escapes text for HTML element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON that is safe inside a `<script type="application/json">` element:
/// `<` only occurs inside JSON strings, where `\u003c` means the same, so no
/// `</script>` or `<!--` can appear.
pub fn script_json(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v)
        .expect("report data serializes")
        .replace('<', "\\u003c")
}

/// The complete page.
pub fn render(r: &Report) -> String {
    let data = script_json(r);
    let mut out = String::with_capacity(PAGE.len() + CSS.len() + JS.len() + data.len());
    // Fill the placeholders in order; the data goes in last so nothing
    // inside it is ever taken for a placeholder.
    let mut rest = PAGE;
    for (mark, value) in [
        ("{{TITLE}}", escape(&r.title)),
        ("{{CSS}}", CSS.to_owned()),
        ("{{DATA}}", data),
        ("{{JS}}", JS.to_owned()),
    ] {
        let (before, after) = rest
            .split_once(mark)
            .expect("the page template has every placeholder once, in order");
        out.push_str(before);
        out.push_str(&value);
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_cannot_close_the_script_element() {
        let s =
            script_json(&serde_json::json!({ "path": "/w/</script><script>alert(1)</script>" }));
        assert!(!s.contains("</script"));
        let back: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back["path"], "/w/</script><script>alert(1)</script>");
    }

    #[test]
    fn page_is_self_contained() {
        let r = Report {
            title: "t <b>".into(),
            generated: "now".into(),
            monitor_version: "0".into(),
            categories: super::super::model::CATEGORIES,
            traces: vec![],
            unmatched_verdicts: 0,
        };
        let page = render(&r);
        assert!(page.contains("<title>t &lt;b&gt;</title>"));
        for remote in ["http://", "https://", "src=\"//", "@import", "<link"] {
            assert!(!page.contains(remote), "page references {remote}");
        }
        assert!(!page.contains("{{"), "a placeholder was left");
    }
}
