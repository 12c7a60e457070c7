use super::*;
use crate::topology::{parse, parse_deferring_program_vars};

fn input(profile: Option<&str>, text: &str) -> Input {
    let (topology, deferred) =
        parse_deferring_program_vars(text, "t.toml", &LoadOptions::default()).unwrap();
    Input {
        profile: profile.map(str::to_string),
        source: "t.toml".into(),
        topology,
        deferred,
    }
}

const CLIENT_SERVER: &str = r#"
name = "t"
[vars]
size = "1000"
delay = "5ms"
[nodes.client]
client = true
command = ["sh", "-c", "echo $HOME ${size}"]
[nodes.server]
role = "ucs"
config = { videos = [{ name = "v", segments = "${size}", segment_duration = "2s", qualities = ["1mbit"] }] }
ready = { tcp = 80 }
[nodes.router]
[[links]]
endpoints = ["client", "router"]
delay = "${delay}"
[[links]]
endpoints = ["router", "server"]
rate = "10mbit"
"#;

/// The checked-in docker-compose.yml is what `cdnlab compose` writes for the shipped
/// topologies: the topology files are its one source.
#[test]
fn the_checked_in_compose_file_is_generated_from_the_shipped_topologies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let inputs: Vec<Input> = SHIPPED
        .iter()
        .map(|(profile, path)| {
            let mut input = load(*profile, &root.join(path), &[]).unwrap();
            input.source = path.to_string();
            input
        })
        .collect();
    let generated = generate(&inputs, &Target::Compose).unwrap();
    let checked_in = std::fs::read_to_string(root.join("docker-compose.yml")).unwrap();
    let script = std::fs::read_to_string(root.join("scripts/compose-timeline.sh")).unwrap();
    assert!(
        generated.compose == checked_in
            && generated.timeline_script.as_deref() == Some(script.as_str()),
        "docker-compose.yml or scripts/compose-timeline.sh differ from what `cdnlab compose` \
         writes; regenerate them:\n  cdnlab compose {} --out docker-compose.yml \
         --timeline-script scripts/compose-timeline.sh",
        SHIPPED
            .iter()
            .map(|(p, f)| p.map_or(f.to_string(), |p| format!("{p}={f}")))
            .collect::<Vec<_>>()
            .join(" ")
    );
}

/// A variable only a program uses is left to the environment with the file's value as its
/// default; one a link uses is written as its value; any other `$` is compose's literal `$$`.
#[test]
fn program_variables_become_environment_defaults() {
    let text = generate(&[input(None, CLIENT_SERVER)], &Target::Compose)
        .unwrap()
        .compose;
    assert!(text.contains("segments = \"${SIZE:-1000}\""), "{text}");
    assert!(text.contains("\"echo $$HOME ${SIZE:-1000}\""), "{text}");
    assert!(
        text.contains("--net=client-router=198.18.0.0/29,peers=router,delay=5ms\""),
        "{text}"
    );
    assert!(!text.contains("DELAY"), "{text}");
    assert!(
        text.contains("# Variables (environment or .env): SIZE=1000"),
        "{text}"
    );
    assert!(text.contains("changes them): delay"), "{text}");
}

/// Services, networks and routes follow the topology: the client reaches the server's link
/// through the router, the server's readiness is its TCP port, the client waits for it.
#[test]
fn services_follow_the_topology() {
    let text = generate(&[input(None, CLIENT_SERVER)], &Target::Compose)
        .unwrap()
        .compose;
    for needle in [
        "  client:\n",
        "  server:\n",
        "  router:\n",
        "      - \"--route=198.18.0.8/29=198.18.0.3\"\n",
        "      - \"--ready-tcp=80\"\n",
        "      server:\n        condition: \"service_healthy\"\n",
        "    sysctls: [\"net.ipv4.ip_forward=1\"]\n",
        "  router-server:\n    ipam:\n      config:\n        - subnet: \"198.18.0.8/29\"\n          gateway: \"198.18.0.9\"\n",
        // Each container names the router by its address on the network they share.
        "    extra_hosts: [\"client:198.18.0.2\", \"server:198.18.0.11\", \"router:198.18.0.3\"]\n    networks:\n      client-router:\n        ipv4_address: \"198.18.0.2\"",
        "\"router:198.18.0.10\"]\n    networks:\n      router-server:\n        ipv4_address: \"198.18.0.11\"",
        "--net=router-server=198.18.0.8/29,peers=server,rate=10mbit",
    ] {
        assert!(text.contains(needle), "no {needle:?} in\n{text}");
    }
}

/// A LAN whose members send at different rates: each member's container holds what arrives
/// from a member with other impairments as that member's (`--net-from`).
#[test]
fn members_with_their_own_rates_are_named_to_the_others() {
    let lan = r#"
name = "t"
[nodes.a]
[nodes.b]
[nodes.c]
[[lans]]
name = "lan"
members = ["a", "b", "c"]
delay = "2ms"
from.b = { rate = "1mbit" }
"#;
    let text = generate(&[input(None, lan)], &Target::Compose)
        .unwrap()
        .compose;
    let a = &text[text.find("  a:\n").unwrap()..text.find("  b:\n").unwrap()];
    assert!(
        a.contains("\"--net=lan=198.18.0.0/29,peers=b+c,delay=2ms\""),
        "{a}"
    );
    assert!(
        a.contains("\"--net-from=lan=198.18.0.3,delay=2ms,rate=1mbit\""),
        "{a}"
    );
    assert!(!a.contains("198.18.0.4,"), "{a}");
    let b = &text[text.find("  b:\n").unwrap()..text.find("  c:\n").unwrap()];
    assert!(
        b.contains("\"--net=lan=198.18.0.0/29,peers=a+c,delay=2ms,rate=1mbit\""),
        "{b}"
    );
    assert!(b.contains("\"--net-from=lan=198.18.0.2,delay=2ms\""), "{b}");
}

/// Topologies side by side: the second's names carry its profile and its subnets follow the
/// first's; the timeline is written as the commands that do it.
#[test]
fn a_profile_prefixes_its_names_and_its_timeline_is_spelled_out() {
    let timeline = r#"
name = "u"
[nodes.x]
client = true
command = ["true"]
[nodes.y]
[[links]]
endpoints = ["x", "y"]
[[timeline]]
at = "5s"
link = ["x", "y"]
delay = "80ms"
[[timeline]]
at = "9s"
stop = "x"
"#;
    let generated = generate(
        &[input(None, CLIENT_SERVER), input(Some("two"), timeline)],
        &Target::Compose,
    )
    .unwrap();
    let script = generated.timeline_script.expect("a timeline script");
    assert!(
        script.contains(
            "  u)\n    at 5000000000 5s; link_set two-x-y --delay 80ms\n    \
             at 9000000000 9s; stop_service two-x\n    ;;\n"
        ),
        "{script}"
    );
    assert!(script.contains("usage: $0 LAB (one of: u)"), "{script}");
    let text = generated.compose;
    for needle in [
        "  two-x:\n    image: \"${CDNLAB_IMAGE:-cdnlab:latest}\"\n    profiles: [\"two\"]\n",
        "  two-x-y:\n    ipam:\n      config:\n        - subnet: \"198.18.0.16/29\"",
        "#   at 5s: in every container on two-x-y: cdnlab container link set two-x-y --delay 80ms\n",
        "#   at 9s: docker compose stop two-x\n",
        "    extra_hosts: [\"x:198.18.0.18\"",
    ] {
        assert!(text.contains(needle), "no {needle:?} in\n{text}");
    }
}

#[test]
fn what_compose_cannot_hold_is_refused_by_name() {
    let ready_command =
        CLIENT_SERVER.replace("ready = { tcp = 80 }", "ready = { command = [\"true\"] }");
    let error = generate(&[input(None, &ready_command)], &Target::Compose).unwrap_err();
    assert!(
        error.starts_with("t.toml: node server: `ready = { command = ... }`"),
        "{error}"
    );
    let error = generate(
        &[input(None, CLIENT_SERVER), input(None, CLIENT_SERVER)],
        &Target::Compose,
    )
    .unwrap_err();
    assert_eq!(error, "only one topology can be without a profile");
    let error = generate(
        &[
            input(Some("p"), CLIENT_SERVER),
            input(Some("p"), CLIENT_SERVER),
        ],
        &Target::Compose,
    )
    .unwrap_err();
    assert_eq!(error, "the profile `p` is given twice");
    assert!(check_profile("Fog")
        .unwrap_err()
        .contains("not a profile name"));
    assert!(check_profile("fog-2").is_ok());
}

/// `--set` reaches the files that have the variable, and a variable that shapes a link is
/// written with its new value.
#[test]
fn set_changes_the_files_that_have_the_variable() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let set = [("internet_delay".to_string(), "200ms".to_string())];
    let icdn = load(None, &root.join("topologies/interconnected-cdn.toml"), &set).unwrap();
    let chain = load(Some("chain"), &root.join("topologies/chain.toml"), &set).unwrap();
    let text = generate(&[icdn, chain], &Target::Compose).unwrap().compose;
    assert!(text.contains(",peers=uborder,delay=200ms,"), "{text}");
    let bad = [("chunks".to_string(), "many".to_string())];
    let error = load(None, &root.join("topologies/interconnected-cdn.toml"), &bad).unwrap_err();
    assert!(error.contains("node urr (role urr)"), "{error}");
}

/// The timeline script is valid bash (`bash -n` parses it without running it).
#[test]
fn the_timeline_script_parses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(root.join("scripts/compose-timeline.sh"))
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(generate(&[input(None, CLIENT_SERVER)], &Target::Compose)
        .unwrap()
        .timeline_script
        .is_none());
}

fn swarm_target(dir: &crate::testing::TempDir, hosts: Option<usize>) -> Target {
    Target::Swarm(swarm::SwarmOptions {
        certs: dir.0.join("certs"),
        hosts,
    })
}

/// A stack: overlay networks without fixed addresses, peers named where the compose file
/// writes addresses, the directory network with each node's alias, start-up gated by the
/// nodes themselves, each node's own secrets, and restarts only of a task that never started.
#[test]
fn a_stack_names_peers_and_carries_its_secrets() {
    let dir = crate::testing::TempDir::new("compose-swarm");
    let generated = generate(&[input(None, CLIENT_SERVER)], &swarm_target(&dir, None)).unwrap();
    let text = generated.compose;
    for needle in [
        "docker stack deploy -c THIS_FILE t",
        "  client-router:\n    driver: \"overlay\"\n    attachable: true\n    ipam:\n      config:\n        - subnet: \"198.18.0.0/29\"",
        "  cdnlab-directory:\n    driver: \"overlay\"",
        "      cdnlab-directory:\n        aliases: [\"directory-server\"]",
        // The client reaches the server's link through the router, by name.
        "\"--route=198.18.0.8/29=router\"",
        "\"--node=client\"",
        "\"--host=server@router-server\"",
        "\"--host=client@client-router\"",
        // The server waits for the router; the client for both.
        "\"--wait-for=router\"",
        "\"--wait-for=server,router\"",
        "      CDNLAB_CERTS: \"/run/secrets\"",
        "      - source: \"server-key\"\n        target: \"server.key\"\n        mode: 256",
        "    deploy:\n      endpoint_mode: \"dnsrr\"\n      restart_policy:\n        condition: \"on-failure\"\n        delay: \"2s\"\n        max_attempts: 3",
        // Every node, routers too, records that it started, so only a task that never got
        // that far is started again.
        "      CDNLAB_SWARM_SERVICE: \"{{.Service.ID}}\"",
        "\"--started-dir=/results/_started\"",
    ] {
        assert!(text.contains(needle), "no {needle:?} in\n{text}");
    }
    // Routers are not named, and name nobody (nothing runs in them to ask).
    for absent in [
        "ipv4_address",
        "depends_on",
        "extra_hosts",
        "restart: ",
        "certs-",
        "\nvolumes:",
        "--host=router@",
    ] {
        assert!(!text.contains(absent), "{absent:?} in\n{text}");
    }
    // The secrets' files exist: every node's certificate was issued.
    let certs = dir.0.join("certs");
    for node in ["client", "server", "router"] {
        let key = certs.join(node).join(format!("{node}.key"));
        assert!(
            text.contains(&format!("file: \"{}\"", key.display())),
            "{text}"
        );
        assert!(key.is_file(), "{}", key.display());
    }
    let router = &text[text.find("\n  router:\n").unwrap()..];
    assert!(!router.contains("--host="), "{router}");
    // The client's secrets are its own and the CA's, nobody else's.
    let client = &text[text.find("\n  client:\n").unwrap()..text.find("\n  server:\n").unwrap()];
    assert!(
        client.contains("client-key") && !client.contains("server-key"),
        "{client}"
    );
}

/// `host` places a node; `--hosts N` places the others in breadth-first runs, so a chain is
/// cut once; a topology whose timeline starts a node again, or several topologies, have no
/// stack.
#[test]
fn stacks_place_nodes_and_refuse_what_swarm_cannot_hold() {
    let dir = crate::testing::TempDir::new("compose-swarm-place");
    let chain = r#"
name = "c"
[nodes.a]
host = "edge"
[nodes.b]
[nodes.c]
[nodes.d]
[nodes.e]
[[links]]
endpoints = ["a", "b"]
[[links]]
endpoints = ["b", "c"]
[[links]]
endpoints = ["c", "d"]
[[links]]
endpoints = ["d", "e"]
"#;
    let text = generate(&[input(None, chain)], &swarm_target(&dir, Some(2)))
        .unwrap()
        .compose;
    let placed = |node: &str| {
        let start = text.find(&format!("\n  {node}:\n")).unwrap();
        let service = &text[start..];
        let at = service.find("node.labels.cdnlab.host == ").unwrap() + 27;
        service[at..].split('"').next().unwrap().to_string()
    };
    assert_eq!(
        ["a", "b", "c", "d", "e"].map(placed),
        ["edge", "h1", "h1", "h2", "h2"]
    );
    let t = parse(chain, "c.toml", &LoadOptions::default()).unwrap();
    assert!(swarm::placement(&t, None).len() == 1);

    let restart = CLIENT_SERVER.to_string()
        + "[[timeline]]\nat = \"5s\"\nstop = \"server\"\n[[timeline]]\nat = \"9s\"\nstart = \"server\"\n";
    let error = generate(&[input(None, &restart)], &swarm_target(&dir, None)).unwrap_err();
    assert!(
        error.contains("`start = \"server\"` at 9s has no Swarm form"),
        "{error}"
    );
    // A stop alone is fine, and the script finds the task on each host.
    let stop = CLIENT_SERVER.to_string() + "[[timeline]]\nat = \"5s\"\nstop = \"server\"\n";
    let generated = generate(&[input(None, &stop)], &swarm_target(&dir, None)).unwrap();
    let script = generated.timeline_script.unwrap();
    assert!(
        script.contains("label=com.docker.stack.namespace=$stack"),
        "{script}"
    );
    assert!(
        script.contains("at 5000000000 5s; stop_service server"),
        "{script}"
    );
    assert!(
        generated.compose.contains("#   at 5s: docker stop server"),
        "{}",
        generated.compose
    );
    let error = generate(
        &[input(None, CLIENT_SERVER), input(Some("p"), CLIENT_SERVER)],
        &swarm_target(&dir, None),
    )
    .unwrap_err();
    assert!(error.contains("a stack holds one topology"), "{error}");
}

/// A stack that cannot be addressed is refused before any certificate is issued: nothing is
/// left in the certificates' directory.
#[test]
fn a_stack_refused_leaves_no_certificates() {
    let dir = crate::testing::TempDir::new("compose-swarm-refused");
    let refused = generate(
        &[input(None, CLIENT_SERVER)],
        &swarm_target(&dir, Some(65535)),
    )
    .expect_err("65 535 hosts need more addresses than there are");
    assert!(refused.contains("more addresses than"), "{refused}");
    assert!(!dir.0.join("certs").exists(), "certificates issued");
}
