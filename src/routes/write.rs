//! One single-key write as a value, so that a route can send the same command to either pool
//! and compare what each answered.

use crate::proto::StoreCommand;
use crate::{DeleteOutcome, StoreOutcome, TouchOutcome};

/// A single-key write (cas is the route's own path: its token decides the copy).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Write<'v> {
    Store {
        cmd: StoreCommand,
        value: &'v [u8],
        flags: u32,
        exptime: u32,
    },
    Delete,
    Touch(u32),
    Arith {
        incr: bool,
        delta: u64,
    },
}

/// What a pool answered to a [`Write`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Written {
    Store(StoreOutcome),
    Delete(DeleteOutcome),
    Touch(TouchOutcome),
    Arith(Option<u64>),
}

/// How a route treats a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// Whatever the copy held before, it holds the same after (set, delete, touch): send to
    /// every copy.
    Overwrite,
    /// `add`: only if absent.
    Add,
    /// The result depends on the copy's current value (replace, append, prepend, incr,
    /// decr): one authoritative copy.
    ReadModify,
}

impl Write<'_> {
    pub(crate) fn class(&self) -> Class {
        match self {
            Write::Store {
                cmd: StoreCommand::Set,
                ..
            }
            | Write::Delete
            | Write::Touch(_) => Class::Overwrite,
            Write::Store {
                cmd: StoreCommand::Add,
                ..
            } => Class::Add,
            _ => Class::ReadModify,
        }
    }

    /// The command's name, for errors.
    pub(crate) fn command(&self) -> &'static str {
        match self {
            Write::Store { cmd, .. } => match cmd {
                StoreCommand::Set => "set",
                StoreCommand::Add => "add",
                StoreCommand::Replace => "replace",
                StoreCommand::Append => "append",
                StoreCommand::Prepend => "prepend",
                StoreCommand::Cas(_) => "cas",
            },
            Write::Delete => "delete",
            Write::Touch(_) => "touch",
            Write::Arith { incr: true, .. } => "incr",
            Write::Arith { incr: false, .. } => "decr",
        }
    }

    /// Whether the gutter may take it for a failed main server: not the commands whose result
    /// builds on a value the gutter does not have.
    pub(crate) fn gutter_may_take(&self) -> bool {
        match self {
            Write::Store { cmd, .. } => {
                !matches!(cmd, StoreCommand::Append | StoreCommand::Prepend)
            }
            Write::Delete | Write::Touch(_) => true,
            Write::Arith { .. } => false,
        }
    }

    /// The same write with its expiry capped at `cap` seconds.
    pub(crate) fn capped(self, cap: u32, now: std::time::SystemTime) -> Self {
        match self {
            Write::Store {
                cmd,
                value,
                flags,
                exptime,
            } => Write::Store {
                cmd,
                value,
                flags,
                exptime: super::cap_exptime(exptime, cap, now),
            },
            Write::Touch(exptime) => Write::Touch(super::cap_exptime(exptime, cap, now)),
            w => w,
        }
    }
}

/// A route sent one kind of write and read another kind of answer: a bug in the route.
fn mismatch(w: Written) -> crate::Error {
    crate::Error::protocol("route", format!("answer {w:?} to another command"))
}

impl Written {
    pub(crate) fn into_store(self) -> crate::Result<StoreOutcome> {
        match self {
            Written::Store(o) => Ok(o),
            w => Err(mismatch(w)),
        }
    }

    pub(crate) fn into_delete(self) -> crate::Result<DeleteOutcome> {
        match self {
            Written::Delete(o) => Ok(o),
            w => Err(mismatch(w)),
        }
    }

    pub(crate) fn into_touch(self) -> crate::Result<TouchOutcome> {
        match self {
            Written::Touch(o) => Ok(o),
            w => Err(mismatch(w)),
        }
    }

    pub(crate) fn into_arith(self) -> crate::Result<Option<u64>> {
        match self {
            Written::Arith(o) => Ok(o),
            w => Err(mismatch(w)),
        }
    }

    /// The copy did not have the key (the command's condition failed for that reason).
    pub(crate) fn absent(&self) -> bool {
        matches!(
            self,
            Written::Store(StoreOutcome::NotStored | StoreOutcome::NotFound)
                | Written::Delete(DeleteOutcome::NotFound)
                | Written::Touch(TouchOutcome::NotFound)
                | Written::Arith(None)
        )
    }

    /// The copy took the write.
    pub(crate) fn took(&self) -> bool {
        !self.absent() && *self != Written::Store(StoreOutcome::Exists)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_the_gutter() {
        let store = |cmd| Write::Store {
            cmd,
            value: b"v",
            flags: 0,
            exptime: 0,
        };
        assert_eq!(store(StoreCommand::Set).class(), Class::Overwrite);
        assert_eq!(store(StoreCommand::Add).class(), Class::Add);
        assert_eq!(store(StoreCommand::Append).class(), Class::ReadModify);
        assert_eq!(
            Write::Arith {
                incr: true,
                delta: 1
            }
            .class(),
            Class::ReadModify
        );
        assert!(!store(StoreCommand::Prepend).gutter_may_take());
        assert!(
            !Write::Arith {
                incr: false,
                delta: 1
            }
            .gutter_may_take()
        );
        assert!(store(StoreCommand::Replace).gutter_may_take());
        let now = std::time::UNIX_EPOCH;
        assert!(matches!(
            store(StoreCommand::Set).capped(30, now),
            Write::Store { exptime: 30, .. }
        ));
        assert!(Written::Arith(None).absent());
        assert!(!Written::Store(StoreOutcome::Exists).took());
        assert!(Written::Arith(Some(0)).took());
    }
}
