//! The simulator's state: which server stores what, which are busy, and for each content the
//! idle slots holding it (so Z_c is a length and every change is an O(1) swap-remove).

use super::placement::EMPTY;

const NONE: u32 = u32::MAX;

/// Told of every change of a content's Z_c or D_c before it happens (the time-weighted
/// statistics close their interval there).
pub trait Observer {
    fn available_changes(&mut self, c: u32, z: u32);
    fn replicas_change(&mut self, c: u32, replicas: u32);
}

pub struct Farm {
    d: usize,
    /// Content of each slot (server s: `s·d .. (s+1)·d`), or EMPTY.
    slots: Vec<u32>,
    /// Index of the slot in `idle[content]`, NONE while its server is busy.
    pos: Vec<u32>,
    /// Per content: its slots on idle servers (Z_c = length).
    idle: Vec<Vec<u32>>,
    /// Busy servers, and each server's index there (NONE: idle).
    busy: Vec<u32>,
    busy_pos: Vec<u32>,
    /// Content each busy server serves.
    serving: Vec<u32>,
    /// Per content: requests in service, replicas, index in `available` (NONE: Z_c = 0).
    in_service: Vec<u32>,
    replicas: Vec<u32>,
    available: Vec<u32>,
    avail_pos: Vec<u32>,
}

impl Farm {
    /// Every server idle, storing `slots` (as `placement::place` lays them out).
    pub fn new(n: usize, d: usize, slots: Vec<u32>) -> Farm {
        let m = slots.len() / d;
        let mut farm = Farm {
            d,
            pos: vec![NONE; slots.len()],
            idle: vec![Vec::new(); n],
            busy: Vec::with_capacity(m),
            busy_pos: vec![NONE; m],
            serving: vec![NONE; m],
            in_service: vec![0; n],
            replicas: vec![0; n],
            available: Vec::with_capacity(n),
            avail_pos: vec![NONE; n],
            slots,
        };
        for slot in 0..farm.slots.len() {
            let c = farm.slots[slot];
            if c != EMPTY {
                farm.replicas[c as usize] += 1;
                farm.push_idle(slot as u32);
            }
        }
        farm
    }

    pub fn servers(&self) -> usize {
        self.busy_pos.len()
    }

    pub fn busy_count(&self) -> usize {
        self.busy.len()
    }

    pub fn available_count(&self, c: u32) -> u32 {
        self.idle[c as usize].len() as u32
    }

    pub fn replicas(&self) -> &[u32] {
        &self.replicas
    }

    pub fn in_service(&self, c: u32) -> u32 {
        self.in_service[c as usize]
    }

    /// Contents with Z_c > 0.
    pub fn available(&self) -> &[u32] {
        &self.available
    }

    pub fn is_available(&self, c: u32) -> bool {
        self.avail_pos[c as usize] != NONE
    }

    /// The `i`-th idle slot holding `c` (i < Z_c).
    pub fn idle_slot(&self, c: u32, i: usize) -> u32 {
        self.idle[c as usize][i]
    }

    /// The `i`-th busy server (i < busy_count).
    pub fn busy_server(&self, i: usize) -> u32 {
        self.busy[i]
    }

    pub fn is_busy(&self, s: u32) -> bool {
        self.busy_pos.get(s as usize).is_some_and(|&p| p != NONE)
    }

    pub fn server_of(&self, slot: u32) -> u32 {
        slot / self.d as u32
    }

    pub fn stores(&self, server: u32, c: u32) -> bool {
        let s = server as usize * self.d;
        self.slots[s..s + self.d].contains(&c)
    }

    /// The idle server holding `slot` starts serving `c`.
    pub fn start(&mut self, slot: u32, c: u32, observer: &mut impl Observer) {
        let s = self.server_of(slot);
        self.busy_pos[s as usize] = self.busy.len() as u32;
        self.busy.push(s);
        self.serving[s as usize] = c;
        self.in_service[c as usize] += 1;
        let first = s as usize * self.d;
        for k in first..first + self.d {
            let content = self.slots[k];
            if content != EMPTY {
                observer.available_changes(content, self.available_count(content));
                self.remove_idle(k as u32);
            }
        }
    }

    /// The busy server `s` completes its service; returns the content it served.
    pub fn finish(&mut self, s: u32, observer: &mut impl Observer) -> u32 {
        let i = self.busy_pos[s as usize] as usize;
        self.busy.swap_remove(i);
        if let Some(&moved) = self.busy.get(i) {
            self.busy_pos[moved as usize] = i as u32;
        }
        self.busy_pos[s as usize] = NONE;
        let c = self.serving[s as usize];
        self.serving[s as usize] = NONE;
        self.in_service[c as usize] -= 1;
        let first = s as usize * self.d;
        for k in first..first + self.d {
            let content = self.slots[k];
            if content != EMPTY {
                observer.available_changes(content, self.available_count(content));
                self.push_idle(k as u32);
            }
        }
        c
    }

    /// Replaces the replica in `slot` (on an idle server) by one of `c`.
    pub fn replace(&mut self, slot: u32, c: u32, observer: &mut impl Observer) {
        let old = self.slots[slot as usize];
        observer.available_changes(old, self.available_count(old));
        observer.replicas_change(old, self.replicas[old as usize]);
        observer.available_changes(c, self.available_count(c));
        observer.replicas_change(c, self.replicas[c as usize]);
        self.remove_idle(slot);
        self.replicas[old as usize] -= 1;
        self.slots[slot as usize] = c;
        self.replicas[c as usize] += 1;
        self.push_idle(slot);
    }

    fn push_idle(&mut self, slot: u32) {
        let c = self.slots[slot as usize] as usize;
        self.pos[slot as usize] = self.idle[c].len() as u32;
        self.idle[c].push(slot);
        if self.idle[c].len() == 1 {
            self.avail_pos[c] = self.available.len() as u32;
            self.available.push(c as u32);
        }
    }

    fn remove_idle(&mut self, slot: u32) {
        let c = self.slots[slot as usize] as usize;
        let i = self.pos[slot as usize] as usize;
        self.idle[c].swap_remove(i);
        if let Some(&moved) = self.idle[c].get(i) {
            self.pos[moved as usize] = i as u32;
        }
        self.pos[slot as usize] = NONE;
        if self.idle[c].is_empty() {
            let j = self.avail_pos[c] as usize;
            self.available.swap_remove(j);
            if let Some(&moved) = self.available.get(j) {
                self.avail_pos[moved as usize] = j as u32;
            }
            self.avail_pos[c] = NONE;
        }
    }
}
