//! Eager credit: how a receiver bounds the unmatched eager data it holds.
//!
//! A receiver grants each sender `eager_credit` bytes. The sender spends
//! credit per eager frame (header + payload) and falls back to rendezvous,
//! whose Rts is small, when it has too little; the receiver returns credit
//! once the data has left its unexpected queue, piggybacked on any frame to
//! that sender, or in a Credit frame once a quarter of the grant is owed. A
//! flood of unmatched sends therefore cannot exhaust a receiver's memory.

use crate::p2p::Peer;
use crate::Engine;
use gridmpi_wire::{Frame, Header, Payload, Pid};

/// The credit state between this process and one peer.
#[derive(Debug)]
pub(crate) struct Credit {
    /// Eager bytes we may still send to the peer.
    avail: u64,
    /// Eager bytes of the peer consumed here that we have not yet returned.
    owed: u64,
}

impl Credit {
    pub(crate) fn new(grant: u32) -> Credit {
        Credit { avail: grant as u64, owed: 0 }
    }

    /// Spend `cost` bytes if we have them.
    pub(crate) fn try_spend(&mut self, cost: u64) -> bool {
        if cost <= self.avail {
            self.avail -= cost;
            true
        } else {
            false
        }
    }

    /// The peer returned `bytes`.
    pub(crate) fn returned(&mut self, bytes: u32) {
        self.avail = self.avail.saturating_add(bytes as u64);
    }

    /// What we owe, to piggyback on a frame to the peer (at most a header
    /// field's worth; the rest goes on the next frame).
    pub(crate) fn take_owed(&mut self) -> u32 {
        let give = self.owed.min(u32::MAX as u64);
        self.owed -= give;
        give as u32
    }
}

impl Peer {
    pub(crate) fn owes(&self) -> u64 {
        self.credit.owed
    }
}

impl Engine {
    /// Note that `bytes` of eager credit from `peer` were consumed here, and
    /// return them explicitly once enough has accumulated.
    pub(crate) fn owe_credit(&mut self, peer: Pid, bytes: u64) {
        let p = &mut self.peers[peer as usize];
        p.credit.owed += bytes;
        if p.owes() >= (self.config.eager_credit as u64 / 4).max(1) {
            self.transmit(peer, Header::new(Frame::Credit, 0), Payload::None, None);
        }
    }
}
