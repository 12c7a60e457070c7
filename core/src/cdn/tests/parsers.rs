//! Manifests written by other tools: relative URIs, CRLF, comments, byte ranges, inherited DASH
//! elements; malformed input is an error with a line, never a panic.

use crate::cdn::manifest_dash::parse_mpd;
use crate::cdn::manifest_hls::{parse_master, parse_media, parse_playlist, Playlist};
use crate::cdn::{ByteRange, ManifestError};

const MASTER_URL: &str = "http://urr:8080/p/direct-rr/bbb/master.m3u8";
const MEDIA_URL: &str = "http://urr:8080/p/direct-rr/bbb/500k/playlist.m3u8";

#[test]
fn relative_uri_playlists_resolve_against_their_url() {
    let master = "\u{feff}#EXTM3U\r\n# a comment\r\n#EXT-X-VERSION:3\r\n\r\n\
        #EXT-X-STREAM-INF:BANDWIDTH=1000000,CODECS=\"avc1.64001f,mp4a.40.2\",RESOLUTION=640x360\r\n\
        1000k/playlist.m3u8\r\n\
        #EXT-X-STREAM-INF:PROGRAM-ID=1, BANDWIDTH=500000\r\n\
        ../../other/500k.m3u8?token=a%2Fb\r\n\
        #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=90000,URI=\"iframes.m3u8\"\r\n";
    let variants = parse_master(master, MASTER_URL).expect("master");
    assert_eq!(variants.len(), 2);
    assert_eq!(
        variants[0].url,
        "http://urr:8080/p/direct-rr/bbb/1000k/playlist.m3u8"
    );
    assert_eq!(variants[0].codecs.as_deref(), Some("avc1.64001f,mp4a.40.2"));
    assert_eq!(variants[1].bandwidth_bps, 500_000);
    assert_eq!(
        variants[1].url,
        "http://urr:8080/p/other/500k.m3u8?token=a%2Fb"
    );

    let media = "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-MEDIA-SEQUENCE:17\n\
        #EXT-X-MAP:URI=\"init.mp4\",BYTERANGE=\"720@0\"\n\
        #EXTINF:2.002,first title\nseg-00000.m4s\n\
        #EXT-X-DISCONTINUITY\n#EXTINF:4,\n/abs/seg-00001.m4s\n\
        #EXTINF:1.5,\n//cdn2.example:8080/x/seg-00002.m4s\n\
        #EXTINF:2.0,\nhttps://other.example/seg-00003.m4s\n\
        #EXTINF:2.0,\n./sub/../seg-00004.m4s\n\
        #EXT-X-ENDLIST\n";
    let p = parse_media(media, MEDIA_URL).expect("media");
    let urls: Vec<&str> = p.segments.iter().map(|s| s.url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "http://urr:8080/p/direct-rr/bbb/500k/seg-00000.m4s",
            "http://urr:8080/abs/seg-00001.m4s",
            "http://cdn2.example:8080/x/seg-00002.m4s",
            "https://other.example/seg-00003.m4s",
            "http://urr:8080/p/direct-rr/bbb/500k/seg-00004.m4s",
        ]
    );
    let durations: Vec<f64> = p.segments.iter().map(|s| s.duration_s).collect();
    assert_eq!(durations, [2.002, 4.0, 1.5, 2.0, 2.0]);
    assert_eq!(
        (p.target_duration_s, p.media_sequence, p.ended),
        (Some(4), 17, true)
    );
    let init = p.init.expect("EXT-X-MAP");
    assert_eq!(init.url, "http://urr:8080/p/direct-rr/bbb/500k/init.mp4");
    assert_eq!(
        init.byte_range,
        Some(ByteRange {
            offset: 0,
            length: 720
        })
    );
}

#[test]
fn byte_ranges_continue_from_the_previous_segment() {
    let media = "#EXTM3U\n#EXTINF:2,\n#EXT-X-BYTERANGE:1000@500\nall.ts\n#EXTINF:2,\n#EXT-X-BYTERANGE:300\nall.ts\n#EXTINF:2,\nother.ts\n";
    let p = parse_media(media, MEDIA_URL).expect("media");
    assert_eq!(
        p.segments[0].byte_range,
        Some(ByteRange {
            offset: 500,
            length: 1000
        })
    );
    assert_eq!(
        p.segments[1].byte_range,
        Some(ByteRange {
            offset: 1500,
            length: 300
        })
    );
    assert_eq!(p.segments[2].byte_range, None);
    assert!(!p.ended);
    assert_eq!(p.target_duration_s, None);
    let orphan = "#EXTM3U\n#EXTINF:2,\n#EXT-X-BYTERANGE:300\nall.ts\n";
    assert!(parse_media(orphan, MEDIA_URL).is_err());
}

fn error(text: &str) -> ManifestError {
    match parse_playlist(text, MEDIA_URL) {
        Err(e) => e,
        Ok(p) => panic!("accepted {text:?} as {p:?}"),
    }
}

#[test]
fn malformed_playlists_are_errors_with_lines() {
    assert_eq!(error("").line, None);
    assert_eq!(error("\n\nseg.ts\n").line, Some(3), "no #EXTM3U");
    assert_eq!(
        error("#EXTM3U\nseg.ts\n").line,
        Some(2),
        "URI without EXTINF"
    );
    assert_eq!(error("#EXTM3U\n#EXTINF:abc,\nseg.ts\n").line, Some(2));
    assert_eq!(error("#EXTM3U\n#EXTINF:-1,\nseg.ts\n").line, Some(2));
    assert_eq!(error("#EXTM3U\n#EXTINF:inf,\nseg.ts\n").line, Some(2));
    assert_eq!(
        error("#EXTM3U\n#EXTINF:2,\n").line,
        Some(2),
        "EXTINF at the end"
    );
    assert_eq!(
        error("#EXTM3U\n#EXT-X-STREAM-INF:RESOLUTION=1x1\nv.m3u8\n").line,
        Some(2),
        "no BANDWIDTH"
    );
    assert_eq!(
        error("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=-5\nv.m3u8\n").line,
        Some(2)
    );
    assert_eq!(
        error("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=5,CODECS=\"avc1\nv.m3u8\n").line,
        Some(2),
        "unterminated quote"
    );
    assert_eq!(
        error("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH\nv.m3u8\n").line,
        Some(2),
        "no '='"
    );
    assert_eq!(error("#EXTM3U\n#EXT-X-TARGETDURATION:2.5\n").line, Some(2));
    assert_eq!(
        error("#EXTM3U\n#EXT-X-VERSION:3\n").line,
        None,
        "neither kind"
    );
    assert_eq!(
        error("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n#EXTINF:2,\ns.ts\n").line,
        None,
        "both kinds"
    );
    assert_eq!(
        error("#EXTM3U\n#EXTINF:2,\nseg 1.ts\n").line,
        Some(3),
        "space in URI"
    );
    assert!(matches!(
        parse_playlist("#EXTM3U\n#EXTINF:2,\ns.ts\n", MEDIA_URL),
        Ok(Playlist::Media(_))
    ));
    assert!(
        parse_master("#EXTM3U\n#EXTINF:2,\ns.ts\n", MEDIA_URL).is_err(),
        "media is not master"
    );
    assert!(parse_media(
        "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n",
        MEDIA_URL
    )
    .is_err());
    assert!(
        parse_media("#EXTM3U\n#EXTINF:2,\ns.ts\n", "relative/base.m3u8").is_err(),
        "base must be absolute"
    );
}

const MPD_URL: &str = "http://urr:8080/p/direct-rr/bbb/manifest.mpd";

#[test]
fn mpd_with_base_urls_timeline_and_audio() {
    let mpd = r#"<?xml version="1.0" encoding="utf-8"?>
<!-- written by another packager -->
<!DOCTYPE MPD [ <!ELEMENT MPD ANY> ]>
<dash:MPD xmlns:dash="urn:mpeg:dash:schema:mpd:2011" xmlns:xlink="http://www.w3.org/1999/xlink" type='static' mediaPresentationDuration="PT6S">
  <dash:BaseURL>http://cdn.example/content/</dash:BaseURL>
  <dash:Period>
    <dash:BaseURL>period1/</dash:BaseURL>
    <dash:AdaptationSet contentType="audio" mimeType="audio/mp4">
      <dash:Representation id="a" bandwidth="64000">
        <dash:SegmentList duration="2"><dash:SegmentURL media="a1.m4s"/></dash:SegmentList>
      </dash:Representation>
    </dash:AdaptationSet>
    <dash:AdaptationSet mimeType="video/mp4" codecs="avc1.4d401f">
      <dash:SegmentList timescale="90000">
        <dash:Initialization sourceURL="init-$shared$.mp4" range="0-799"/>
        <dash:SegmentTimeline><dash:S t="0" d="180000" r="1"/><dash:S d="90000"/></dash:SegmentTimeline>
      </dash:SegmentList>
      <dash:Representation id="hi" bandwidth="2000000">
        <dash:BaseURL>/root/hi/</dash:BaseURL>
        <dash:SegmentList>
          <dash:SegmentURL media="s1.m4s?a=1&amp;b=2"/>
          <dash:SegmentURL media="s2.m4s" mediaRange="100-199"/>
          <dash:SegmentURL/>
        </dash:SegmentList>
      </dash:Representation>
      <dash:Representation id="lo" bandwidth="500000" codecs="avc1.42c01e">
        <dash:SegmentList timescale="1000" duration="2000">
          <dash:SegmentURL media="lo/1.m4s"/><dash:SegmentURL media="lo/2.m4s"/><dash:SegmentURL media="lo/3.m4s"/>
        </dash:SegmentList>
      </dash:Representation>
    </dash:AdaptationSet>
  </dash:Period>
</dash:MPD>
"#;
    let p = parse_mpd(mpd, MPD_URL).expect("MPD");
    assert_eq!(p.renditions.len(), 2, "audio skipped");
    let (lo, hi) = (&p.renditions[0], &p.renditions[1]);
    assert_eq!((lo.id.as_deref(), lo.bitrate_bps), (Some("lo"), 500_000));
    assert_eq!(lo.codecs.as_deref(), Some("avc1.42c01e"));
    assert_eq!(
        hi.codecs.as_deref(),
        Some("avc1.4d401f"),
        "inherited from the AdaptationSet"
    );
    assert_eq!(
        lo.segments[2].url,
        "http://cdn.example/content/period1/lo/3.m4s"
    );
    assert_eq!(
        lo.segments.iter().map(|s| s.duration_s).collect::<Vec<_>>(),
        [2.0, 2.0, 2.0]
    );
    let urls: Vec<&str> = hi.segments.iter().map(|s| s.url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "http://cdn.example/root/hi/s1.m4s?a=1&b=2",
            "http://cdn.example/root/hi/s2.m4s",
            "http://cdn.example/root/hi/"
        ]
    );
    assert_eq!(
        hi.segments[1].byte_range,
        Some(ByteRange {
            offset: 100,
            length: 100
        })
    );
    assert_eq!(
        hi.segments.iter().map(|s| s.duration_s).collect::<Vec<_>>(),
        [2.0, 2.0, 1.0],
        "timeline from the set"
    );
    let init = hi.init.as_ref().expect("inherited Initialization");
    assert_eq!(init.url, "http://cdn.example/root/hi/init-$shared$.mp4");
    assert_eq!(
        init.byte_range,
        Some(ByteRange {
            offset: 0,
            length: 800
        })
    );
}

fn mpd_error(text: &str) -> String {
    match parse_mpd(text, MPD_URL) {
        Err(e) => e.to_string(),
        Ok(p) => panic!("accepted {text:?} as {p:?}"),
    }
}

#[test]
fn unsupported_and_malformed_mpds_are_errors() {
    let wrap = |inner: &str| {
        format!("<MPD type=\"static\"><Period><AdaptationSet mimeType=\"video/mp4\">{inner}</AdaptationSet></Period></MPD>")
    };
    let list = |attrs: &str, urls: &str| {
        wrap(&format!("<Representation bandwidth=\"1\"><SegmentList {attrs}>{urls}</SegmentList></Representation>"))
    };
    assert!(mpd_error(&wrap("<Representation bandwidth=\"1\"><SegmentTemplate media=\"$Number$.m4s\"/></Representation>")).contains("SegmentTemplate"));
    assert!(mpd_error(&wrap(
        "<Representation bandwidth=\"1\"><SegmentBase/></Representation>"
    ))
    .contains("SegmentBase"));
    assert!(mpd_error(&wrap("<Representation><SegmentList duration=\"2\"><SegmentURL media=\"a\"/></SegmentList></Representation>")).contains("bandwidth"));
    assert!(mpd_error(&list("", "<SegmentURL media=\"a\"/>")).contains("duration"));
    assert!(mpd_error(&list("duration=\"2\"", "")).contains("no <SegmentURL>"));
    assert!(mpd_error(&list(
        "duration=\"2\" timescale=\"0\"",
        "<SegmentURL media=\"a\"/>"
    ))
    .contains("timescale"));
    assert!(mpd_error(&list(
        "duration=\"2\"",
        "<SegmentURL media=\"a\" mediaRange=\"9-1\"/>"
    ))
    .contains("byte range"));
    assert!(mpd_error(&list(
        "",
        "<SegmentTimeline><S d=\"2\" r=\"-1\"/></SegmentTimeline><SegmentURL media=\"a\"/>"
    ))
    .contains("open-ended"));
    assert!(mpd_error(&list(
        "",
        "<SegmentTimeline><S d=\"2\" r=\"4000000000\"/></SegmentTimeline><SegmentURL media=\"a\"/>"
    ))
    .contains("covers 2 segments"));
    assert!(mpd_error(&list(
        "",
        "<SegmentTimeline><S d=\"2\"/></SegmentTimeline><SegmentURL/><SegmentURL/>"
    ))
    .contains("covers 1"));
    assert!(mpd_error("<MPD type=\"dynamic\"><Period/></MPD>").contains("dynamic"));
    assert!(mpd_error("<MPD><Period/><Period/></MPD>").contains("several"));
    assert!(mpd_error("<MPD></MPD>").contains("no <Period>"));
    assert!(
        mpd_error("<MPD><Period><AdaptationSet mimeType=\"audio/mp4\"/></Period></MPD>")
            .contains("no video")
    );
    assert!(mpd_error("<html/>").contains("<html>"));
    // Malformed XML, each with its line.
    assert!(mpd_error("<MPD>\n<Period>\n</MPD>")
        .starts_with("line 3: expected 'Period' tag, not 'MPD' at 3:1"));
    assert!(mpd_error("<MPD>\n<Period>").contains("never closed"));
    assert!(mpd_error("").contains("does not have a root node"));
    assert!(mpd_error("<MPD a=1/>").contains("expected a quote"));
    assert!(
        mpd_error("<MPD a=\"1\" a=\"2\"/>").contains("attribute 'a' at 1:12 is already defined")
    );
    assert!(mpd_error("<MPD a=\"&bogus;\"/>").contains("unknown entity reference 'bogus'"));
    assert!(mpd_error("<MPD/><MPD/>").contains("unknown token at 1:7"));
    assert!(mpd_error("text<MPD/>").contains("unknown token at 1:1"));
    assert!(mpd_error("<MPD><!-- never closed").contains("expected '-->'"));
    assert!(mpd_error("<MPD a=\"x").contains("unexpected end of stream"));
    assert!(mpd_error("</MPD>").contains("invalid name token"));
    let deep = format!("{}{}", "<a>".repeat(100), "</a>".repeat(100));
    assert!(mpd_error(&deep).contains("line 1: elements nest deeper than 64"));
    // Entities that expand to 10⁹ characters ("billion laughs") are refused, not expanded.
    let mut laughs =
        String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE MPD [\n<!ENTITY l0 \"ha\">\n");
    for level in 1..10 {
        let previous = format!("&l{};", level - 1).repeat(10);
        laughs += &format!("<!ENTITY l{level} \"{previous}\">\n");
    }
    laughs += "]>\n<MPD>&l9;</MPD>";
    let refused = mpd_error(&laughs);
    assert!(
        refused.contains("a possible entity reference loop is detected"),
        "{refused}"
    );
}

#[test]
fn truncated_manifests_never_panic() {
    // Every prefix of valid documents (cut at every char boundary) parses or fails cleanly.
    let hls = "#EXTM3U\r\n#EXT-X-MAP:URI=\"i.mp4\",BYTERANGE=\"5@0\"\r\n#EXTINF:2.0,t\r\n#EXT-X-BYTERANGE:10@5\r\ns.m4s\r\n#EXT-X-ENDLIST\r\n";
    let mpd = "<?xml version=\"1.0\"?><MPD><BaseURL>b/</BaseURL><Period><AdaptationSet><Representation bandwidth=\"5\"><SegmentList timescale=\"2\" duration=\"4\"><Initialization sourceURL=\"i\"/><SegmentURL media=\"s&amp;\" mediaRange=\"0-9\"/><![CDATA[x]]></SegmentList></Representation></AdaptationSet></Period></MPD>";
    for text in [hls, mpd] {
        for end in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            let _ = parse_playlist(&text[..end], MEDIA_URL);
            let _ = parse_mpd(&text[..end], MPD_URL);
        }
    }
    assert!(parse_playlist(hls, MEDIA_URL).is_ok());
    let p = parse_mpd(mpd, MPD_URL).expect("complete MPD");
    assert_eq!(
        p.renditions[0].segments[0].url,
        "http://urr:8080/p/direct-rr/bbb/b/s&"
    );
    assert_eq!(p.renditions[0].segments[0].duration_s, 2.0);
}
