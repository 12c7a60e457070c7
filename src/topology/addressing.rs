//! Subnets and interface addresses. Segments without an explicit `subnet` get one from the
//! RFC 2544 benchmarking range, so lab addresses never collide with real networks.

use super::error::{Diags, Span};
use super::model::{Interface, Node, NodeId, Segment, SegmentKind};
use netem::Impairments;
use std::fmt;
use std::net::Ipv4Addr;
use toml::Spanned;

/// 198.18.0.0/15: the pool subnets are allocated from.
pub(crate) const POOL: Subnet = Subnet {
    net: 0xC612_0000,
    prefix: 15,
};

/// An IPv4 subnet with room for at least a network, two hosts and a broadcast address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Subnet {
    net: u32,
    prefix: u8,
}

impl Subnet {
    /// Parses `198.19.0.0/30`; the address must be the network's own (no host bits set).
    pub(crate) fn parse(text: &str) -> Result<Subnet, String> {
        let shape = || format!("`{text}` is not a subnet; write it as e.g. \"198.19.0.0/30\"");
        let (addr, prefix) = text.trim().split_once('/').ok_or_else(shape)?;
        let addr: Ipv4Addr = addr.parse().map_err(|_| shape())?;
        let prefix: u8 = prefix.parse().map_err(|_| shape())?;
        if prefix > 32 {
            return Err(shape());
        }
        if prefix > 30 {
            return Err(format!(
                "`{text}` has no room for a network and a broadcast address besides its hosts; use /30 or shorter"
            ));
        }
        let subnet = Subnet {
            net: u32::from(addr) & mask(prefix),
            prefix,
        };
        if subnet.net != u32::from(addr) {
            return Err(format!(
                "`{text}` is not a network address; did you mean {subnet}?"
            ));
        }
        Ok(subnet)
    }

    /// The smallest subnet size holding `members` hosts plus network and broadcast addresses.
    pub(crate) fn prefix_for(members: usize) -> u8 {
        let mut prefix = 30;
        while prefix > 0 && Subnet::size_of(prefix) < members as u64 + 2 {
            prefix -= 1;
        }
        prefix
    }

    fn size_of(prefix: u8) -> u64 {
        1u64 << (32 - prefix)
    }

    pub(crate) fn addr(self) -> Ipv4Addr {
        Ipv4Addr::from(self.net)
    }

    /// Host addresses it holds (all but the network and broadcast addresses).
    pub(crate) fn hosts(self) -> u64 {
        Subnet::size_of(self.prefix) - 2
    }

    /// The `n`th host address (0 is the first after the network address).
    fn host(self, n: usize) -> Ipv4Addr {
        Ipv4Addr::from(self.net + 1 + n as u32)
    }

    fn start(self) -> u64 {
        u64::from(self.net)
    }

    fn end(self) -> u64 {
        self.start() + Subnet::size_of(self.prefix)
    }

    fn overlaps(self, other: Subnet) -> bool {
        self.start() < other.end() && other.start() < self.end()
    }
}

impl fmt::Display for Subnet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr(), self.prefix)
    }
}

fn mask(prefix: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)
}

/// A segment as read from the file, before it has a subnet.
pub(crate) struct RawSegment {
    /// `a-b` for a link, the LAN's name for a LAN.
    pub(crate) name: String,
    pub(crate) kind: SegmentKind,
    pub(crate) members: Vec<NodeId>,
    pub(crate) egress: Vec<Impairments>,
    pub(crate) subnet: Option<Spanned<Subnet>>,
    /// Where the segment is declared (its `[[links]]` or `[[lans]]` header).
    pub(crate) span: Span,
}

impl RawSegment {
    /// "link a-b" or "LAN office", for messages.
    pub(crate) fn describe(&self) -> String {
        match self.kind {
            SegmentKind::Link => format!("link {}", self.name),
            SegmentKind::Lan => format!("LAN {}", self.name),
        }
    }
}

/// Each segment's subnet: its explicit one, or the first free block of the pool (links a /30,
/// LANs the smallest block holding their members), in segment order.
pub(crate) fn assign_subnets(segments: &[RawSegment], diags: &mut Diags) -> Vec<Subnet> {
    // Blocks in use, sorted by start address, for a first-fit scan.
    let mut taken: Vec<Subnet> = Vec::new();
    // Explicit subnets so far, with where each was written and whose it is.
    let mut explicit: Vec<(Subnet, Span, &RawSegment)> = Vec::new();
    for segment in segments {
        let Some(subnet) = &segment.subnet else {
            continue;
        };
        let value = *subnet.get_ref();
        if let Some((other, span, owner)) =
            explicit.iter().find(|(other, ..)| other.overlaps(value))
        {
            diags.at(
                &subnet.span(),
                format!(
                    "subnet {value} overlaps {other}, the subnet of {} (line {})",
                    owner.describe(),
                    diags.line_of(span)
                ),
            );
        }
        explicit.push((value, subnet.span(), segment));
        insert_sorted(&mut taken, value);
    }
    let mut subnets = Vec::with_capacity(segments.len());
    for segment in segments {
        if let Some(subnet) = &segment.subnet {
            subnets.push(*subnet.get_ref());
            continue;
        }
        let prefix = match segment.kind {
            SegmentKind::Link => 30,
            SegmentKind::Lan => Subnet::prefix_for(segment.members.len()),
        };
        match first_fit(&taken, prefix) {
            Some(subnet) => {
                insert_sorted(&mut taken, subnet);
                subnets.push(subnet);
            }
            None => {
                diags.at(
                    &segment.span,
                    format!(
                        "the address pool {POOL} is full: no room for a /{prefix} for {}",
                        segment.describe()
                    ),
                );
                return subnets;
            }
        }
    }
    subnets
}

fn insert_sorted(taken: &mut Vec<Subnet>, subnet: Subnet) {
    let at = taken.partition_point(|t| t.start() <= subnet.start());
    taken.insert(at, subnet);
}

/// The lowest free, aligned block of the pool with this prefix; `taken` is sorted by start.
fn first_fit(taken: &[Subnet], prefix: u8) -> Option<Subnet> {
    let size = Subnet::size_of(prefix);
    let align = |at: u64| at.div_ceil(size) * size;
    let mut candidate = align(POOL.start());
    for block in taken {
        if block.end() <= candidate {
            continue;
        }
        if block.start() >= candidate + size {
            break;
        }
        candidate = align(block.end());
    }
    (candidate + size <= POOL.end()).then_some(Subnet {
        net: candidate as u32,
        prefix,
    })
}

/// The segments with their subnets, and each member's interface on them: `eth0`, `eth1`, … in
/// segment order; on a link, endpoint 0 gets the first host address and endpoint 1 the second;
/// on a LAN, members get host addresses in member order.
pub(crate) fn place_segments(
    raw: Vec<RawSegment>,
    subnets: &[Subnet],
    nodes: &mut [Node],
) -> Vec<Segment> {
    raw.into_iter()
        .zip(subnets)
        .enumerate()
        .map(|(index, (segment, subnet))| {
            for (n, &member) in segment.members.iter().enumerate() {
                let node = &mut nodes[member];
                let ifname = format!("eth{}", node.interfaces.len());
                node.interfaces.push(Interface {
                    ifname,
                    segment: index,
                    addr: subnet.host(n),
                    prefix_len: subnet.prefix,
                });
            }
            Segment {
                name: segment.name,
                kind: segment.kind,
                members: segment.members,
                subnet: subnet.addr(),
                prefix_len: subnet.prefix,
                egress: segment.egress,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subnet(text: &str) -> Subnet {
        Subnet::parse(text).unwrap()
    }

    #[test]
    fn parses_network_addresses_only() {
        assert_eq!(subnet("198.19.0.0/30").to_string(), "198.19.0.0/30");
        assert_eq!(subnet("10.0.0.0/8").hosts(), (1 << 24) - 2);
        assert_eq!(
            Subnet::parse("198.19.0.1/30").unwrap_err(),
            "`198.19.0.1/30` is not a network address; did you mean 198.19.0.0/30?"
        );
        assert_eq!(
            Subnet::parse("198.19.0.0/31").unwrap_err(),
            "`198.19.0.0/31` has no room for a network and a broadcast address besides its hosts; use /30 or shorter"
        );
        for bad in ["198.19.0.0", "198.19.0/24", "198.19.0.0/33", "x/24"] {
            assert!(
                Subnet::parse(bad).unwrap_err().contains("is not a subnet"),
                "{bad}"
            );
        }
    }

    #[test]
    fn lan_prefixes_hold_members_plus_network_and_broadcast() {
        assert_eq!(Subnet::prefix_for(2), 30);
        assert_eq!(Subnet::prefix_for(3), 29);
        assert_eq!(Subnet::prefix_for(6), 29);
        assert_eq!(Subnet::prefix_for(7), 28);
        assert_eq!(Subnet::prefix_for(254), 24);
        assert_eq!(Subnet::prefix_for(255), 23);
    }

    #[test]
    fn first_fit_skips_taken_blocks_and_keeps_alignment() {
        let taken = vec![subnet("198.18.0.0/30"), subnet("198.18.0.8/30")];
        assert_eq!(first_fit(&taken, 30), Some(subnet("198.18.0.4/30")));
        assert_eq!(first_fit(&taken, 29), Some(subnet("198.18.0.16/29")));
        let whole = vec![POOL];
        assert_eq!(first_fit(&whole, 30), None);
        let half = vec![subnet("198.18.0.0/16")];
        assert_eq!(first_fit(&half, 16), Some(subnet("198.19.0.0/16")));
        assert_eq!(first_fit(&half, 15), None);
    }
}
