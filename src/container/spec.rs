//! What `cdnlab container run` is told on its command line: the container's networks with their
//! impairments (`--net access=198.19.211.0/24,delay=10ms,rate=5mbit`) and its static routes
//! (`--route 198.19.0.0/16=198.19.211.2`). Parsing only; errors name the flag and the part.
//!
//! In a Swarm stack the orchestrator picks the addresses, so a gateway or a sender may be a
//! peer node's name instead (`--route 198.19.0.0/16=drr`), and `--host NODE@NET` names a node
//! by its address on one of its networks; the directory (`container::directory`) says them.

use crate::topology::{change_entries, change_from_flags, ImpairmentFields};
use netem::{Impairments, ImpairmentsChange};
use std::net::Ipv4Addr;

/// An IPv4 prefix, `198.19.211.0/24`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subnet {
    pub addr: Ipv4Addr,
    pub prefix: u8,
}

impl Subnet {
    pub fn parse(text: &str) -> Result<Subnet, String> {
        let (addr, prefix) = text
            .split_once('/')
            .ok_or_else(|| format!("`{text}` is not a subnet like 198.19.211.0/24"))?;
        let addr: Ipv4Addr = addr
            .parse()
            .map_err(|_| format!("`{addr}` in `{text}` is not an IPv4 address"))?;
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| *p <= 32)
            .ok_or_else(|| format!("`{prefix}` in `{text}` is not a prefix length (0-32)"))?;
        let subnet = Subnet { addr, prefix };
        let network = Ipv4Addr::from(u32::from(addr) & subnet.mask());
        if network != addr {
            return Err(format!(
                "`{text}` has host bits set: the subnet is {network}/{prefix}"
            ));
        }
        Ok(subnet)
    }

    fn mask(&self) -> u32 {
        if self.prefix == 0 {
            0
        } else {
            u32::MAX << (32 - self.prefix)
        }
    }

    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        u32::from(addr) & self.mask() == u32::from(self.addr) & self.mask()
    }
}

impl std::fmt::Display for Subnet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// One network the container is attached to: found by its subnet, impaired as given.
#[derive(Debug, Clone, PartialEq)]
pub struct NetSpec {
    pub name: String,
    pub subnet: Subnet,
    /// What this container's traffic onto the network gets (the kernel backend applies it on
    /// egress) and, with the userspace backend, what arriving traffic gets unless its sender
    /// is listed in `senders`.
    pub impairments: Impairments,
    /// Members whose traffic onto the network is impaired differently (`--net-from`): what
    /// arrives from each is held as its sender's impairments say (userspace backend).
    pub senders: Vec<(Ipv4Addr, Impairments)>,
    /// The other members' node names (`peers=A+B`): what a role names when it asks for its
    /// link towards a node (`roles::links`).
    pub peers: Vec<String>,
}

/// A member's address on a network: written out, or the node's name, to be learned from the
/// directory where the orchestrator picks addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerAddr {
    Ip(Ipv4Addr),
    Node(String),
}

impl PeerAddr {
    fn parse(text: &str) -> Result<PeerAddr, String> {
        if let Ok(ip) = text.parse() {
            return Ok(PeerAddr::Ip(ip));
        }
        if text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return Err(format!("`{text}` is not an IPv4 address"));
        }
        crate::topology::check_node_name(text, "node")
            .map_err(|e| format!("`{text}` is neither an IPv4 address nor a node name: {e}"))?;
        Ok(PeerAddr::Node(text.to_string()))
    }
}

impl std::fmt::Display for PeerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerAddr::Ip(ip) => write!(f, "{ip}"),
            PeerAddr::Node(node) => write!(f, "{node}"),
        }
    }
}

/// `--net-from NAME=ADDR[,KEY=VALUE...]`: traffic on network NAME from member ADDR.
#[derive(Debug, Clone, PartialEq)]
pub struct SenderSpec {
    pub net: String,
    pub addr: PeerAddr,
    pub impairments: Impairments,
}

/// `NAME=SUBNET[,KEY=VALUE...]`, the keys being the topology's impairment keys (delay, jitter,
/// delay_correlation, distribution, loss, loss_correlation, rate, limit) and `peers=A+B`, the
/// other members' node names.
pub fn parse_net(text: &str) -> Result<NetSpec, String> {
    let fail = |message: String| format!("--net `{text}`: {message}");
    let (name, rest) = text
        .split_once('=')
        .ok_or_else(|| fail("expected NAME=SUBNET[,delay=10ms,rate=5mbit...]".into()))?;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(fail(format!(
            "`{name}` is not a network name (letters, digits, - _ .)"
        )));
    }
    let mut parts = rest.split(',');
    let subnet = Subnet::parse(parts.next().unwrap_or_default()).map_err(fail)?;
    let (peers, keys): (Vec<&str>, Vec<&str>) = parts.partition(|p| p.starts_with("peers="));
    let peers = match peers.as_slice() {
        [] => Vec::new(),
        [one] => one["peers=".len()..]
            .split('+')
            .map(|peer| {
                crate::topology::check_node_name(peer, "node").map_err(&fail)?;
                Ok(peer.to_string())
            })
            .collect::<Result<_, String>>()?,
        _ => return Err(fail("`peers` is given twice".into())),
    };
    Ok(NetSpec {
        name: name.to_string(),
        subnet,
        impairments: parse_keys(keys.into_iter()).map_err(fail)?,
        senders: Vec::new(),
        peers,
    })
}

/// `NAME=ADDR[,KEY=VALUE...]`, the keys as for `--net`.
pub fn parse_sender(text: &str) -> Result<SenderSpec, String> {
    let fail = |message: String| format!("--net-from `{text}`: {message}");
    let (net, rest) = text
        .split_once('=')
        .ok_or_else(|| fail("expected NAME=ADDRESS[,delay=10ms,rate=5mbit...]".into()))?;
    let mut parts = rest.split(',');
    let addr = parts.next().unwrap_or_default();
    Ok(SenderSpec {
        net: net.to_string(),
        addr: PeerAddr::parse(addr).map_err(fail)?,
        impairments: parse_keys(parts).map_err(fail)?,
    })
}

/// Gives each `--net-from` to its network, its address looked up by `resolve` (given the
/// network and the sender) where it is a node's name; names one whose network is not given,
/// whose node is not a member, or whose address is outside that network's subnet.
pub fn attach_senders(
    nets: &mut [NetSpec],
    senders: &[SenderSpec],
    mut resolve: impl FnMut(&str, &str) -> Result<Ipv4Addr, String>,
) -> Result<(), String> {
    for sender in senders {
        let flag = format!("--net-from `{}={}`", sender.net, sender.addr);
        let Some(net) = nets.iter_mut().find(|n| n.name == sender.net) else {
            return Err(format!("{flag}: no --net `{}`", sender.net));
        };
        let addr = match &sender.addr {
            PeerAddr::Ip(ip) => *ip,
            PeerAddr::Node(node) if net.peers.contains(node) => {
                resolve(&net.name, node).map_err(|e| format!("{flag}: {e}"))?
            }
            PeerAddr::Node(node) => {
                return Err(format!(
                    "{flag}: `{node}` is not one of {}'s peers",
                    net.name
                ))
            }
        };
        if !net.subnet.contains(addr) {
            return Err(format!(
                "{flag}: the address {addr} is not in {}'s subnet {}",
                net.name, net.subnet
            ));
        }
        net.senders.push((addr, sender.impairments.clone()));
    }
    Ok(())
}

/// `--host NODE@NET`: the name NODE stands for NODE's address on its network NET.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    pub node: String,
    pub net: String,
}

pub fn parse_host(text: &str) -> Result<HostSpec, String> {
    let fail = |message: String| format!("--host `{text}`: {message}");
    let (node, net) = text
        .split_once('@')
        .ok_or_else(|| fail("expected NODE@NETWORK".into()))?;
    crate::topology::check_node_name(node, "node").map_err(fail)?;
    if net.is_empty() {
        return Err(fail("the network's name is empty".into()));
    }
    Ok(HostSpec {
        node: node.to_string(),
        net: net.to_string(),
    })
}

/// The `KEY=VALUE` parts of `--net` and `--net-from`: the topology's impairment keys.
fn parse_keys<'a>(parts: impl Iterator<Item = &'a str>) -> Result<Impairments, String> {
    let mut fields = ImpairmentFields::<&str>::default();
    for part in parts {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("`{part}` is not KEY=VALUE"))?;
        let slot = match key {
            "delay" => &mut fields.delay,
            "jitter" => &mut fields.jitter,
            "delay_correlation" => &mut fields.delay_correlation,
            "distribution" => &mut fields.distribution,
            "loss" => &mut fields.loss,
            "loss_correlation" => &mut fields.loss_correlation,
            "rate" => &mut fields.rate,
            "limit" => &mut fields.limit,
            other => {
                return Err(format!(
                    "unknown key `{other}` (known: delay, jitter, delay_correlation, \
                     distribution, loss, loss_correlation, rate, limit)"
                ))
            }
        };
        if slot.replace(value).is_some() {
            return Err(format!("`{key}` is given twice"));
        }
    }
    // The flag-style messages (`--delay: ...`) name keys here, without the dashes.
    let change = change_from_flags(&fields).map_err(|e| {
        let lines: Vec<&str> = e.lines().map(|l| l.trim_start_matches("--")).collect();
        lines.join("; ")
    })?;
    let impairments = change.apply_to(&Impairments::default());
    impairments.check()?;
    Ok(impairments)
}

/// The `KEY=VALUE` parts that `parse_keys` reads back as `impairments` (`delay=10ms,rate=5mbit`;
/// empty for none): what `cdnlab compose` writes after a network's name and subnet.
pub fn impairment_keys(impairments: &Impairments) -> String {
    let i = impairments;
    let differs = ImpairmentsChange {
        delay_ns: (i.delay_ns > 0).then_some(i.delay_ns),
        jitter_ns: (i.jitter_ns > 0).then_some(i.jitter_ns),
        delay_correlation: (i.delay_correlation > 0.0).then_some(i.delay_correlation),
        distribution: i.distribution,
        loss: (i.loss > 0.0).then_some(i.loss),
        loss_correlation: (i.loss_correlation > 0.0).then_some(i.loss_correlation),
        rate_bps: i.rate_bps.map(Some),
        limit: (i.limit != netem::DEFAULT_LIMIT).then_some(i.limit),
    };
    let parts: Vec<String> = change_entries(&differs)
        .into_iter()
        .map(|(key, text)| format!("{key}={text}"))
        .collect();
    parts.join(",")
}

/// A static route: traffic for `dest` goes through `via`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteSpec {
    pub dest: Subnet,
    pub via: PeerAddr,
}

/// `DEST=VIA`, e.g. `198.19.0.0/16=198.19.211.2`, or `198.19.0.0/16=drr` (a peer's name).
pub fn parse_route(text: &str) -> Result<RouteSpec, String> {
    let fail = |message: String| format!("--route `{text}`: {message}");
    let (dest, via) = text
        .split_once('=')
        .ok_or_else(|| fail("expected SUBNET=GATEWAY, e.g. 198.19.0.0/16=198.19.211.2".into()))?;
    Ok(RouteSpec {
        dest: Subnet::parse(dest).map_err(fail)?,
        via: PeerAddr::parse(via).map_err(fail)?,
    })
}

/// Names any network given twice or any two networks whose subnets overlap.
pub fn check_nets(nets: &[NetSpec]) -> Result<(), String> {
    for (i, a) in nets.iter().enumerate() {
        for b in &nets[i + 1..] {
            if a.name == b.name {
                return Err(format!("--net `{}` is given twice", a.name));
            }
            if a.subnet.contains(b.subnet.addr) || b.subnet.contains(a.subnet.addr) {
                return Err(format!(
                    "--net `{}` ({}) and `{}` ({}) overlap: each network needs its own subnet",
                    a.name, a.subnet, b.name, b.subnet
                ));
            }
        }
    }
    Ok(())
}

/// The interface holding an address inside `subnet`, and that address, from `ip -o -4 addr
/// show` output lines (`2: eth0    inet 198.19.211.3/24 brd ... scope global eth0`).
pub fn interface_in(ip_addr_output: &str, subnet: Subnet) -> Option<(String, Ipv4Addr)> {
    ip_addr_output.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (ifname, addr) = match fields.as_slice() {
            [_, ifname, "inet", addr, ..] => (*ifname, *addr),
            _ => return None,
        };
        let addr: Ipv4Addr = addr.split('/').next()?.parse().ok()?;
        subnet
            .contains(addr)
            .then(|| (ifname.split('@').next().unwrap_or(ifname).to_string(), addr))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_net_parses_with_its_impairments() {
        let net = parse_net("access=198.19.211.0/24,delay=10ms,rate=5mbit,loss=1%").unwrap();
        assert_eq!(net.name, "access");
        assert_eq!(net.subnet.to_string(), "198.19.211.0/24");
        assert_eq!(net.impairments.delay_ns, 10_000_000);
        assert_eq!(net.impairments.rate_bps, Some(5_000_000));
        assert_eq!(net.impairments.loss, 0.01);
        let bare = parse_net("internet=198.19.220.0/24").unwrap();
        assert!(bare.impairments.is_none());
        assert!(bare.peers.is_empty());
        let peers = parse_net("core-site1=198.18.0.0/29,peers=core,rate=4mbit").unwrap();
        assert_eq!(peers.peers, ["core"]);
        assert_eq!(peers.impairments.rate_bps, Some(4_000_000));
    }

    #[test]
    fn bad_nets_are_named() {
        for (text, needle) in [
            ("access", "expected NAME=SUBNET"),
            ("access=198.19.211.0", "not a subnet"),
            ("access=198.19.211.0/33", "prefix length"),
            ("access=198.19.300.0/24", "not an IPv4 address"),
            ("access=198.19.211.0/24,delay=ten", "delay"),
            ("access=198.19.200.0/20", "the subnet is 198.19.192.0/20"),
            ("access=198.19.211.0/24,speed=5mbit", "unknown key `speed`"),
            ("access=198.19.211.0/24,delay=1ms,delay=2ms", "given twice"),
            ("a b=198.19.211.0/24", "not a network name"),
            ("lan=198.19.211.0/24,peers=a+B", "bad node name `B`"),
            (
                "lan=198.19.211.0/24,peers=a,peers=b",
                "`peers` is given twice",
            ),
        ] {
            let error = parse_net(text).unwrap_err();
            assert!(error.contains(needle), "{text}: {error}");
            assert!(error.starts_with(&format!("--net `{text}`")), "{error}");
        }
    }

    /// What `impairment_keys` writes, `--net` reads back as the same impairments.
    #[test]
    fn impairment_keys_read_back() {
        for text in [
            "n=198.18.0.0/29",
            "n=198.18.0.0/29,delay=10ms,rate=5mbit",
            "n=198.18.0.0/29,delay=50ms,jitter=5ms,delay_correlation=25%,distribution=normal,loss=1%,loss_correlation=10%,rate=1gbit,limit=30000",
        ] {
            let net = parse_net(text).unwrap();
            let keys = impairment_keys(&net.impairments);
            let again = parse_net(format!("n=198.18.0.0/29,{keys}").trim_end_matches(','))
                .unwrap();
            assert_eq!(again.impairments, net.impairments, "{text} -> {keys}");
        }
    }

    /// A sender's impairments go to its network; one on no given network, or outside its
    /// network's subnet, is named.
    #[test]
    fn senders_attach_to_their_networks() {
        let mut nets = vec![parse_net("lan=198.18.0.0/28,peers=b+c,delay=5ms").unwrap()];
        let no_directory = |_: &str, node: &str| Err(format!("no directory for {node}"));
        let peer = parse_sender("lan=198.18.0.3,delay=5ms,rate=1mbit").unwrap();
        attach_senders(&mut nets, &[peer], no_directory).unwrap();
        assert_eq!(nets[0].senders.len(), 1);
        assert_eq!(nets[0].senders[0].0, Ipv4Addr::new(198, 18, 0, 3));
        assert_eq!(nets[0].senders[0].1.rate_bps, Some(1_000_000));
        let elsewhere = parse_sender("wan=198.18.0.3").unwrap();
        let error = attach_senders(&mut nets, &[elsewhere], no_directory).unwrap_err();
        assert_eq!(error, "--net-from `wan=198.18.0.3`: no --net `wan`");
        let outside = parse_sender("lan=198.18.1.3").unwrap();
        let error = attach_senders(&mut nets, &[outside], no_directory).unwrap_err();
        assert!(
            error.contains("198.18.1.3 is not in lan's subnet 198.18.0.0/28"),
            "{error}"
        );
        // A peer named is looked up on its network; a node that is no peer is refused.
        let by_name = parse_sender("lan=c,rate=2mbit").unwrap();
        assert_eq!(by_name.addr, PeerAddr::Node("c".into()));
        attach_senders(&mut nets, &[by_name], |net, node| {
            assert_eq!((net, node), ("lan", "c"));
            Ok(Ipv4Addr::new(198, 18, 0, 9))
        })
        .unwrap();
        assert_eq!(nets[0].senders[1].0, Ipv4Addr::new(198, 18, 0, 9));
        let error =
            attach_senders(&mut nets, &[parse_sender("lan=d").unwrap()], no_directory).unwrap_err();
        assert!(error.contains("`d` is not one of lan's peers"), "{error}");
        let error =
            attach_senders(&mut nets, &[parse_sender("lan=b").unwrap()], no_directory).unwrap_err();
        assert!(error.contains("no directory for b"), "{error}");
        for (text, needle) in [
            ("lan", "expected NAME=ADDRESS"),
            ("lan=198.18.0.300", "not an IPv4 address"),
            ("lan=B", "neither an IPv4 address nor a node name"),
            ("lan=198.18.0.3,rate=fast", "rate"),
        ] {
            let error = parse_sender(text).unwrap_err();
            assert!(error.contains(needle), "{text}: {error}");
            assert!(
                error.starts_with(&format!("--net-from `{text}`")),
                "{error}"
            );
        }
    }

    #[test]
    fn overlapping_or_repeated_nets_are_refused() {
        let a = parse_net("a=198.19.0.0/16").unwrap();
        assert!(a.subnet.contains(Ipv4Addr::new(198, 19, 255, 1)));
        assert!(!a.subnet.contains(Ipv4Addr::new(198, 18, 255, 1)));
        let b = parse_net("b=198.19.211.0/24").unwrap();
        let c = parse_net("c=198.18.0.0/24").unwrap();
        assert!(check_nets(&[a.clone(), c.clone()]).is_ok());
        assert!(check_nets(&[a.clone(), b]).unwrap_err().contains("overlap"));
        assert!(check_nets(&[c.clone(), c]).unwrap_err().contains("twice"));
    }

    #[test]
    fn routes_parse() {
        let route = parse_route("198.19.0.0/16=198.19.211.2").unwrap();
        assert_eq!(route.dest.prefix, 16);
        assert_eq!(route.via, PeerAddr::Ip(Ipv4Addr::new(198, 19, 211, 2)));
        assert_eq!(
            parse_route("198.19.0.0/16=drr").unwrap().via,
            PeerAddr::Node("drr".into())
        );
        assert!(parse_route("198.19.0.0/16").is_err());
        for (text, needle) in [
            (
                "198.19.0.0/16=198.19.0.300",
                "`198.19.0.300` is not an IPv4 address",
            ),
            ("198.19.0.0/16=GW", "`GW` is neither"),
        ] {
            let error = parse_route(text).unwrap_err();
            assert!(error.contains(needle), "{text}: {error}");
        }
    }

    #[test]
    fn hosts_name_a_node_on_a_network() {
        let host = parse_host("fdn2@fed-1-2").unwrap();
        assert_eq!((host.node.as_str(), host.net.as_str()), ("fdn2", "fed-1-2"));
        for (text, needle) in [
            ("fdn2", "expected NODE@NETWORK"),
            ("fdn2@", "empty"),
            ("Fdn2@lan", "bad node name"),
        ] {
            let error = parse_host(text).unwrap_err();
            assert!(error.starts_with(&format!("--host `{text}`")), "{error}");
            assert!(error.contains(needle), "{text}: {error}");
        }
    }

    #[test]
    fn the_interface_of_a_subnet_is_found() {
        let output = "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n\
                      41: eth0@if42    inet 198.19.211.3/24 brd 198.19.211.255 scope global eth0\n\
                      43: eth1    inet 198.19.220.3/24 brd 198.19.220.255 scope global eth1\n";
        let find = |s: &str| interface_in(output, Subnet::parse(s).unwrap());
        assert_eq!(
            find("198.19.211.0/24"),
            Some(("eth0".into(), Ipv4Addr::new(198, 19, 211, 3)))
        );
        assert_eq!(
            find("198.19.220.0/24"),
            Some(("eth1".into(), Ipv4Addr::new(198, 19, 220, 3)))
        );
        assert_eq!(find("198.19.230.0/24"), None);
    }
}
