//! RFC 3986 §5.4 reference resolution examples (as the WHATWG URL standard resolves them: `//g`
//! is `http://g/`), and origins.

use crate::cdn::{resolve, BaseUrl};

#[test]
fn rfc3986_normal_and_abnormal_examples() {
    let base = "http://a/b/c/d;p?q";
    let cases = [
        ("g:h", "g:h"),
        ("g", "http://a/b/c/g"),
        ("./g", "http://a/b/c/g"),
        ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"),
        ("//g", "http://g/"),
        ("?y", "http://a/b/c/d;p?y"),
        ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q#s"),
        ("g#s", "http://a/b/c/g#s"),
        ("g?y#s", "http://a/b/c/g?y#s"),
        (";x", "http://a/b/c/;x"),
        ("g;x", "http://a/b/c/g;x"),
        ("g;x?y#s", "http://a/b/c/g;x?y#s"),
        ("", "http://a/b/c/d;p?q"),
        (".", "http://a/b/c/"),
        ("./", "http://a/b/c/"),
        ("..", "http://a/b/"),
        ("../", "http://a/b/"),
        ("../g", "http://a/b/g"),
        ("../..", "http://a/"),
        ("../../", "http://a/"),
        ("../../g", "http://a/g"),
        ("../../../g", "http://a/g"),
        ("../../../../g", "http://a/g"),
        ("/./g", "http://a/g"),
        ("/../g", "http://a/g"),
        ("g.", "http://a/b/c/g."),
        (".g", "http://a/b/c/.g"),
        ("g..", "http://a/b/c/g.."),
        ("..g", "http://a/b/c/..g"),
        ("./../g", "http://a/b/g"),
        ("./g/.", "http://a/b/c/g/"),
        ("g/./h", "http://a/b/c/g/h"),
        ("g/../h", "http://a/b/c/h"),
        ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
        ("g;x=1/../y", "http://a/b/c/y"),
        ("g?y/./x", "http://a/b/c/g?y/./x"),
        ("g?y/../x", "http://a/b/c/g?y/../x"),
        ("g#s/./x", "http://a/b/c/g#s/./x"),
        ("g#s/../x", "http://a/b/c/g#s/../x"),
        ("  g  ", "http://a/b/c/g"),
    ];
    for (reference, expected) in cases {
        assert_eq!(
            resolve(base, reference).as_deref(),
            Ok(expected),
            "{reference:?}"
        );
    }
    assert_eq!(
        resolve("http://a", "g").as_deref(),
        Ok("http://a/g"),
        "empty base path"
    );
    assert!(resolve("/relative/base", "g").is_err());
    assert!(resolve(base, "a b").is_err());
    assert!(resolve(base, "a\u{7}b").is_err());
    assert_eq!(
        resolve("HTTP://Dcs:80/v/master.m3u8", "720p/seg-1.ts").as_deref(),
        Ok("http://dcs/v/720p/seg-1.ts"),
        "scheme and host lower-cased, the default port dropped"
    );
}

#[test]
fn base_urls_are_origins() {
    for ok in [
        "http://ucs1:8080",
        "http://ucs1:8080/",
        "https://x.example",
        "http://10.0.0.1:80",
        "http://[::1]:8080",
        "http://[fd00::2]",
    ] {
        let url = BaseUrl::parse(ok).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            url.join("/v/master.m3u8"),
            format!("{}/v/master.m3u8", ok.trim_end_matches('/'))
        );
    }
    for bad in [
        "ucs1:8080",
        "ftp://x",
        "http://",
        "http://:80",
        "http://h:",
        "http://h:99999",
        "http://h:8080/path",
        "http://u@h",
        "http://h?q",
        "http://[::1",
        "http://[::1]x",
        "http://h h",
    ] {
        assert!(BaseUrl::parse(bad).is_err(), "{bad}");
    }
    let json =
        serde_json::to_string(&BaseUrl::parse("http://dcs1:8080").expect("url")).expect("json");
    assert_eq!(json, "\"http://dcs1:8080\"");
    assert!(serde_json::from_str::<BaseUrl>("\"http://dcs1:8080/x\"").is_err());
}
