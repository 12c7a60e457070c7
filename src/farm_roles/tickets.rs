//! The tickets that admit a request to a farm node's HTTP: a `roles::tokens` token made with
//! the dispatcher's key for that node, that kind of request and that content
//! ([`ticket_context`]), in the query (`?ticket=T`). The dispatcher's redirect to a server
//! carries the ticket of the transfer it assigned (whose number the server reports back with
//! `Done`), its redirect to the data center one for that loss; a server fetching a replica
//! (`/fill/C`, `/copy/C`) makes one with the key the dispatcher gave it. A request without
//! one did not come through the farm and is refused: served, it would be counted as the
//! farm's cost (the data center's bytes) or take a server outside the farm's model.
//!
//! A user's ticket is good for one request: a server takes each transfer's once
//! (`server::Tickets`), the data center each loss's ([`Spent`]). A limit: a server's own
//! tickets for its fetches are checked, not spent, and lab links carry plain HTTP, so a node
//! on the path that reads one can use it again.

use crate::roles::http::semantics::{self as http, error};
use crate::roles::http::Body;
use crate::roles::tokens::TokenKey;
use hyper::{Response, StatusCode};
use std::collections::BTreeSet;

/// The query key of a ticket.
pub const TICKET: &str = "ticket";

/// The ticket in a request's query (`ticket=T`), if it has one.
pub fn ticket_of(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix(TICKET)?.strip_prefix('='))
}

/// What a ticket is for: a request `/KIND/CONTENT` at node `node`, so that one given for
/// another node, kind or content is no ticket there.
pub fn ticket_context(node: &str, kind: &str, content: u32) -> String {
    format!("{node}/{kind}/{content}")
}

/// `/KIND/CONTENT?ticket=T` at `node`, T a fresh ticket of `key` numbered `id`.
pub fn ticketed_path(key: &TokenKey, node: &str, kind: &str, content: u32, id: u64) -> String {
    let ticket = key.token(&ticket_context(node, kind, content), id);
    format!("/{kind}/{content}?{TICKET}={ticket}")
}

/// Why a request's ticket does not admit it.
#[derive(Debug, PartialEq)]
pub enum NoTicket {
    /// None the dispatcher's key made for this node, kind and content (403).
    Forbidden(&'static str),
    /// The dispatcher's key has not come yet (503).
    Unkeyed,
    /// A ticket already taken, or too old (at a server, older than one taken: 503, as a
    /// busy server answers, since a client that came after its lease ran out finds the
    /// server given to another).
    Stale,
}

impl NoTicket {
    pub fn response(&self) -> Response<Body> {
        match self {
            NoTicket::Forbidden(why) => error(StatusCode::FORBIDDEN, why),
            NoTicket::Unkeyed => http::unavailable("no key from the farm's dispatcher yet"),
            NoTicket::Stale => http::unavailable(
                "a ticket already taken, or too old: each is good for one request",
            ),
        }
    }
}

/// The number of the ticket in `query` if `key` made it for `/KIND/CONTENT` at `node`.
pub fn check(
    key: Option<&TokenKey>,
    node: &str,
    kind: &str,
    content: u32,
    query: Option<&str>,
) -> Result<u64, NoTicket> {
    let token = ticket_of(query).ok_or(NoTicket::Forbidden(
        "no ticket: only requests that come through the farm's dispatcher are served",
    ))?;
    let key = key.ok_or(NoTicket::Unkeyed)?;
    key.id_of(&ticket_context(node, kind, content), token)
        .ok_or(NoTicket::Forbidden(
            "not a ticket the farm's dispatcher's key made for this node and content",
        ))
}

/// Tickets one node takes out of order (the data center, the losses of many clients at
/// once), each once: every one taken above a floor is kept, and past [`MAX_SPENT`] the floor
/// rises past the oldest (a ticket below it is refused: thousands of later ones were taken
/// since it was made).
#[derive(Default)]
pub struct Spent {
    floor: u64,
    taken: BTreeSet<u64>,
}

/// The tickets a [`Spent`] keeps.
pub const MAX_SPENT: usize = 4096;

impl Spent {
    /// None taken yet, and every ticket below `floor` refused.
    pub fn above(floor: u64) -> Spent {
        Spent {
            floor,
            taken: BTreeSet::new(),
        }
    }

    /// Takes ticket `id`, unless it was taken or is below the floor.
    pub fn take(&mut self, id: u64) -> Result<(), NoTicket> {
        if id < self.floor || !self.taken.insert(id) {
            return Err(NoTicket::Stale);
        }
        if self.taken.len() > MAX_SPENT {
            if let Some(oldest) = self.taken.pop_first() {
                self.floor = oldest.saturating_add(1);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_is_read_from_the_query() {
        assert_eq!(ticket_of(Some("ticket=42-ab")), Some("42-ab"));
        assert_eq!(ticket_of(Some("x=1&ticket=7-cd")), Some("7-cd"));
        for query in [None, Some(""), Some("tickets=3"), Some("x=ticket=3")] {
            assert_eq!(ticket_of(query), None, "{query:?}");
        }
    }

    /// A ticket admits only the node, kind and content it was made for, and only under the
    /// key that made it.
    #[test]
    fn a_ticket_admits_what_it_was_made_for() {
        let key = TokenKey::generate().unwrap();
        let path = ticketed_path(&key, "dc", "copy", 7, 3);
        let query = path.split_once('?').map(|(_, q)| q);
        assert!(path.starts_with("/copy/7?ticket=3-"), "{path}");
        assert_eq!(check(Some(&key), "dc", "copy", 7, query), Ok(3));
        let forbidden = |r: Result<u64, NoTicket>| matches!(r, Err(NoTicket::Forbidden(_)));
        assert!(forbidden(check(Some(&key), "s1", "copy", 7, query)));
        assert!(forbidden(check(Some(&key), "dc", "fill", 7, query)));
        assert!(forbidden(check(Some(&key), "dc", "copy", 8, query)));
        assert!(forbidden(check(Some(&key), "dc", "copy", 7, None)));
        let other = TokenKey::generate().unwrap();
        assert!(forbidden(check(Some(&other), "dc", "copy", 7, query)));
        assert_eq!(check(None, "dc", "copy", 7, query), Err(NoTicket::Unkeyed));
    }

    /// Each ticket is taken once, in any order, and the kept ones stay bounded.
    #[test]
    fn a_spent_ticket_is_taken_once_in_any_order() {
        let mut spent = Spent::default();
        assert!(spent.take(5).is_ok());
        assert!(spent.take(3).is_ok(), "out of order");
        assert_eq!(spent.take(5), Err(NoTicket::Stale), "twice");
        for id in 10..10 + MAX_SPENT as u64 {
            assert!(spent.take(id).is_ok());
        }
        assert_eq!(spent.taken.len(), MAX_SPENT);
        assert_eq!(spent.take(4), Err(NoTicket::Stale), "below the floor");
        assert!(spent.take(9).is_ok(), "above the floor, never taken");
        assert_eq!(spent.take(10 + MAX_SPENT as u64 - 1), Err(NoTicket::Stale));
        let mut fresh = Spent::above(100);
        assert_eq!(fresh.take(99), Err(NoTicket::Stale), "below a given floor");
        assert!(fresh.take(100).is_ok());
    }
}
