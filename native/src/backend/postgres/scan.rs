//! The scan of the server's message stream: ReadyForQuery statuses and
//! committed server transactions, read from message headers only.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

use super::io::IoState;

/// Follows message boundaries in the bytes the server sends, just far enough
/// to see each ReadyForQuery ('Z', length 5, one status byte). Only headers
/// are looked at; bodies are skipped. Every byte from the server is a typed
/// message except the one-byte answer to an SSLRequest, which the socket skips
/// (`Sock::skip`); after a TLS handshake the scan runs on the decrypted bytes.
///
/// It also counts the server transactions that committed, for the check of
/// the engine's count against `pg_stat_database.xact_commit`: every
/// ReadyForQuery with status 'I' ends a top-level transaction (an autocommit
/// statement, a COMMIT/END, a prepare's Sync, the startup's catalog
/// transaction), which committed unless an ErrorResponse or a "ROLLBACK"
/// CommandComplete came since the previous ReadyForQuery.
#[derive(Default)]
pub(super) struct MsgScan {
    hdr: [u8; 5],
    pub(super) have: usize,
    /// Body bytes of the current message still to skip.
    pub(super) left: usize,
    is_rfq: bool,
    /// In a CommandComplete body: how many of its first bytes were compared
    /// with "ROLLBACK" so far, and whether they all matched.
    tag_at: usize,
    tag_rollback: bool,
    in_tag: bool,
    /// Since the previous ReadyForQuery: an error or a rollback happened.
    pub(super) failed: bool,
    pub commits: u64,
}

const ROLLBACK_TAG: &[u8] = b"ROLLBACK";

impl MsgScan {
    /// Scans bytes the server sent and publishes the transaction status and
    /// the commits to the connection's shared state.
    pub(super) fn scan(&mut self, data: &[u8], io: &IoState) {
        self.feed(data, &io.txn_status);
        io.commits.store(self.commits, Relaxed);
    }

    pub(super) fn feed(&mut self, mut data: &[u8], status: &AtomicU8) {
        while !data.is_empty() {
            if self.left > 0 {
                if self.is_rfq {
                    // The body of a ReadyForQuery is exactly its status byte.
                    status.store(data[0], Relaxed);
                    if data[0] == b'I' && !self.failed {
                        self.commits += 1;
                    }
                    self.failed = false;
                    self.is_rfq = false;
                }
                let k = self.left.min(data.len());
                if self.in_tag {
                    for &b in &data[..k] {
                        if self.tag_at < ROLLBACK_TAG.len() {
                            self.tag_rollback &= b == ROLLBACK_TAG[self.tag_at];
                            self.tag_at += 1;
                        }
                    }
                    if self.tag_at >= ROLLBACK_TAG.len() || k == self.left {
                        if self.tag_rollback && self.tag_at == ROLLBACK_TAG.len() {
                            self.failed = true;
                        }
                        self.in_tag = false;
                    }
                }
                self.left -= k;
                data = &data[k..];
                continue;
            }
            let k = (5 - self.have).min(data.len());
            self.hdr[self.have..self.have + k].copy_from_slice(&data[..k]);
            self.have += k;
            data = &data[k..];
            if self.have == 5 {
                self.have = 0;
                let len = u32::from_be_bytes([self.hdr[1], self.hdr[2], self.hdr[3], self.hdr[4]])
                    as usize;
                self.left = len.saturating_sub(4);
                self.is_rfq = self.hdr[0] == b'Z' && self.left == 1;
                if self.hdr[0] == b'E' {
                    self.failed = true;
                }
                self.in_tag = self.hdr[0] == b'C' && self.left > 0;
                self.tag_at = 0;
                self.tag_rollback = true;
            }
        }
    }
}
