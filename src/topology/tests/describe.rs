use crate::topology::{describe, parse, LoadOptions};

#[test]
fn the_plan_names_every_address_route_direction_and_event() {
    let text = r#"
name = "plan"
[nodes.client]
command = ["curl", "-w", "%{time}\n", "http://server/"]
client = true
[nodes.router]
[nodes.server]
command = ["sleep", "100"]
host = "h2"
[[links]]
endpoints = ["client", "router"]
delay = "10ms"
from.client = { rate = "5mbit" }
[[links]]
endpoints = ["router", "server"]
[[timeline]]
at = "2s"
link = ["router", "server"]
delay = "200ms"
[[timeline]]
at = "3s"
stop = "server"
"#;
    let topology = parse(text, "plan.toml", &LoadOptions::default()).unwrap();
    let plan = describe(&topology);
    assert!(
        plan.starts_with(
            "topology `plan`: nodes 3 (clients 1), links 2, LANs 0, timeline events 2\n"
        ),
        "{plan}"
    );
    assert!(
        plan.contains("  client: command curl -w \"%{time}\\n\" http://server/ [client]\n"),
        "{plan}"
    );
    assert!(
        plan.contains("  server: command sleep 100 [host class h2]\n"),
        "{plan}"
    );
    assert!(plan.contains("  router: host (nothing runs)\n"), "{plan}");
    for node in &topology.nodes {
        for interface in &node.interfaces {
            let line = format!(
                "    {} {}/{} on ",
                interface.ifname, interface.addr, interface.prefix_len
            );
            assert!(plan.contains(&line), "{line} in {plan}");
        }
        for route in &node.routes {
            let line = format!(
                "    route {}/{} via {} dev {}\n",
                route.dst, route.prefix_len, route.via, route.ifname
            );
            assert!(plan.contains(&line), "{line} in {plan}");
        }
    }
    assert!(
        plan.contains("    client → router: delay 10ms rate 5mbit\n"),
        "{plan}"
    );
    assert!(plan.contains("    router → client: delay 10ms\n"), "{plan}");
    assert!(plan.contains("    router → server: none\n"), "{plan}");
    assert!(
        plan.contains("  2s: set router-server (sent by router, server): delay 200ms\n"),
        "{plan}"
    );
    assert!(plan.contains("  3s: stop server\n"), "{plan}");
}
