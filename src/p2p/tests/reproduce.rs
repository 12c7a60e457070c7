//! The offline reproduction writes every file with the columns the README names.

use crate::p2p::params::Params;
use crate::p2p::reproduce::reproduce;

#[test]
fn writes_tables_figures_and_lps() {
    let out = std::env::temp_dir().join(format!("cdnlab-p2p-reproduce-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let summary = reproduce(&out, &Params::quick(), 3).expect("reproduce");
    assert!(summary.contains("T* (Theorem 2)"));
    let read = |name: &str| std::fs::read_to_string(out.join(name)).expect(name);
    let dispatch = read("dispatch.csv");
    let mut lines = dispatch.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("policy,cloud_bandwidth,inter_isp_traffic"));
    let policies: Vec<&str> = lines.map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(policies, ["local", "proportional", "optimal"]);
    let lru = read("lru.csv");
    assert!(lru.starts_with("chunk,pi,rho_measured,rho_model"));
    assert_eq!(lru.lines().count(), 301);
    for name in [
        "dispatch-scarce.csv",
        "t-star.csv",
        "tradeoff.csv",
        "summary.md",
    ] {
        assert!(read(name).lines().count() > 1, "{name}");
    }
    let lps: serde_json::Value = serde_json::from_str(&read("tradeoff-lp.json")).unwrap();
    assert_eq!(lps.as_array().map(Vec::len), Some(6));
    assert!(lps[0]["input"]["capacities"].is_array() && lps[0]["solution"]["flows"].is_array());
    for svg in [
        "lru.svg",
        "tradeoff.svg",
        "dispatch.svg",
        "dispatch-scarce.svg",
    ] {
        assert!(read(svg).starts_with("<svg"), "{svg}");
    }
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn bad_parameters_are_named_before_anything_runs() {
    let check = |sets: &[&str], expected: &str| {
        let mut params = Params::quick();
        let error = sets
            .iter()
            .try_for_each(|s| params.set(s))
            .and_then(|()| params.systems().map(|_| ()))
            .unwrap_err();
        assert!(error.contains(expected), "{sets:?}: {error}");
    };
    check(
        &["chunks=5"],
        "cache: B = 10 must not exceed the number of chunks J = 5",
    );
    check(
        &["upload=1,1,0,1"],
        "upload of ISP 3: must be a positive number",
    );
    check(&["upload=1,1,-2,1"], "upload of ISP 3");
    check(&["peers=10,0,10,10"], "peers of ISP 2: must be at least 1");
    check(
        &["dispatch=local,nearest"],
        "dispatch: unknown policy `nearest`",
    );
    check(&["upload=1,1"], "upload: 2 values for 4 ISPs");
    check(&["colour=red"], "--set colour: unknown key");
    check(
        &["chunks=4000000000"],
        "chunks: 4000000000 must be 1 to 100000",
    );
}
